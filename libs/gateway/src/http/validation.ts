import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import * as classTransformer from 'class-transformer';
import { ValidateIf } from 'class-validator';
import { FieldError, pointer, validation } from '@loyalty/platform';
import { FAST_VALIDATION } from './fast-validation';
import { memoiseValidationMetadata } from './validation-metadata';

// every DTO check of this process (the pipe's and the event checks') looks its rules up once per class
memoiseValidationMetadata();

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

/**
 * Nest's ValidationPipe, with a body that the fast check vouches for (FAST_VALIDATION) built into
 * its class as the pipe would (class-transformer, the pipe's own options) without class-validator's
 * pass. Anything else, and every body the check is unsure of, goes through the pipe unchanged.
 */
class FastBodyValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const metatype = metadata.metatype;
    if (metadata.type === 'body' && this.isTransformEnabled && metatype && this.toValidate(metadata) && FAST_VALIDATION.isCertainlyValid(metatype, value)) {
      return classTransformer.plainToInstance(metatype, value, this.transformOptions);
    }
    return super.transform(value, metadata);
  }
}

/** DTO validation: unknown fields are refused (no mass assignment); errors become a 422 `validation` problem. */
export const validationPipe = (): ValidationPipe =>
  new FastBodyValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validateCustomDecorators: false,
    // keep each error's value: "is required" is told from "is invalid" by it (Nest strips parent values otherwise)
    validationError: { target: false, value: true },
    exceptionFactory: (errors) => validation(flattenValidationErrors(errors)),
  });

/**
 * An optional field that, when present, must pass its other checks: `null` is a value like any
 * other, not absence (class-validator's IsOptional skips every check for null, which let
 * `phone: null` or `scopes: null` through to code that cannot handle it and answered 500).
 * Fields whose contract allows null keep IsOptional.
 */
export const IsOmittable = (): PropertyDecorator => ValidateIf((_object: object, value: unknown) => value !== undefined);
