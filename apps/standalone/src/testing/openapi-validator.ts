import Ajv2020, { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type Json = Record<string, any>;
export interface CheckedResponse { status: number; headers: Headers; body: unknown }

const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Every object schema that does not say otherwise refuses unknown properties: a field the service
 * sends but the document does not describe fails validation (clients may ignore unknown fields,
 * but the document must not omit real ones).
 */
const closeObjects = (node: unknown): void => {
  if (Array.isArray(node)) { node.forEach(closeObjects); return; }
  if (!node || typeof node !== 'object') return;
  const o = node as Json;
  if (o.properties && typeof o.properties === 'object' && !('additionalProperties' in o) && !o.allOf) o.additionalProperties = false;
  for (const v of Object.values(o)) closeObjects(v);
};

/**
 * Checks live responses against an OpenAPI 3.1 document: the status is documented for the
 * operation, the content type is, the body validates against its schema (unknown fields refused)
 * and the required headers are present. Records which operations were seen answering 2xx.
 */
export class OpenApiResponseValidator {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  private readonly cache = new Map<string, ValidateFunction>();
  readonly seen = new Map<string, Set<number>>();

  constructor(private readonly document: Json) {
    addFormats(this.ajv);
    const closed = structuredClone(document);
    closeObjects(closed.components?.schemas);
    closeObjects(closed.paths);
    closeObjects(closed.components?.responses);
    this.ajv.addSchema(closed, 'openapi.json');
  }

  /** Every documented operation as `METHOD /path`. */
  operations(): string[] {
    return Object.entries(this.document.paths as Json).flatMap(([path, item]) =>
      ['get', 'post', 'put', 'patch', 'delete'].filter((m) => (item as Json)[m]).map((m) => `${m.toUpperCase()} ${path}`));
  }

  /** Throws with a readable reason when the response does not match the document. */
  check(method: string, template: string, res: CheckedResponse): void {
    const where = `${method} ${template} → ${res.status}`;
    const op = this.document.paths?.[template]?.[method.toLowerCase()];
    if (!op) throw new Error(`${where}: operation not in the document`);
    const statusKey = op.responses[String(res.status)] ? String(res.status) : op.responses[`${String(res.status)[0]}XX`] ? `${String(res.status)[0]}XX` : null;
    if (!statusKey) throw new Error(`${where}: status not documented (documented: ${Object.keys(op.responses).join(', ')}); body ${JSON.stringify(res.body)}`);
    let response = op.responses[statusKey];
    let pointer = `#/paths/${esc(template)}/${method.toLowerCase()}/responses/${statusKey}`;
    if (response.$ref) {
      pointer = response.$ref;
      response = this.document.components.responses[response.$ref.split('/').pop()];
    }
    for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
      const def = header.$ref ? this.document.components.headers[header.$ref.split('/').pop()] : header;
      if (def.required && res.headers.get(name) === null) throw new Error(`${where}: required header ${name} missing`);
    }
    const contentType = (res.headers.get('content-type') ?? '').split(';')[0].trim();
    if (!response.content) {
      if (res.body !== null && res.body !== '') throw new Error(`${where}: documented without a body, got ${JSON.stringify(res.body)}`);
    } else {
      if (!response.content[contentType]) throw new Error(`${where}: content type ${contentType} not documented (${Object.keys(response.content).join(', ')})`);
      const ref = `openapi.json${pointer}/content/${esc(contentType)}/schema`;
      let validate = this.cache.get(ref);
      if (!validate) {
        validate = this.ajv.compile({ $ref: ref });
        this.cache.set(ref, validate);
      }
      if (!validate(res.body)) {
        throw new Error(`${where}: body does not match the document: ${this.ajv.errorsText(validate.errors, { separator: '\n  ' })}\n  body: ${JSON.stringify(res.body).slice(0, 2000)}`);
      }
    }
    const key = `${method.toUpperCase()} ${template}`;
    if (!this.seen.has(key)) this.seen.set(key, new Set());
    this.seen.get(key)!.add(res.status);
  }
}
