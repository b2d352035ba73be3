import { ValidationError, ValidationPipe } from '@nestjs/common';
import { FieldError, pointer, validation } from '@loyalty/platform';

/** Flattens class-validator errors into {path, message} with JSON-pointer paths. */
export const flattenValidationErrors = (errors: ValidationError[], parents: (string | number)[] = []): FieldError[] => {
  const out: FieldError[] = [];
  for (const e of errors) {
    const path = [...parents, /^\d+$/.test(e.property) ? Number(e.property) : e.property];
    const messages = Object.values(e.constraints ?? {}).map((m) => m.replace(/^property (\S+) should not exist$/, 'unknown field $1'));
    // one error per field: a missing field says so, otherwise every broken constraint in one message
    if (messages.length) {
      const missing = e.value === undefined && !e.constraints?.whitelistValidation;
      out.push({ path: pointer(...path), message: missing ? `${e.property} is required` : messages.reverse().join('; ') });
    }
    if (e.children?.length) out.push(...flattenValidationErrors(e.children, path));
  }
  return out;
};

/** DTO validation: unknown fields are refused (no mass assignment); errors become a 422 `validation` problem. */
export const validationPipe = (): ValidationPipe =>
  new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validateCustomDecorators: false,
    exceptionFactory: (errors) => validation(flattenValidationErrors(errors)),
  });
