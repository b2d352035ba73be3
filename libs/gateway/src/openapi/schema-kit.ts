/**
 * Small builders for the OpenAPI 3.1 (JSON Schema 2020-12) schemas of the API description. Plain
 * objects, so a schema reads like the JSON it documents; `nullable` uses 3.1 type arrays.
 */
export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const str = (description?: string, extra: Schema = {}): Schema => ({ type: 'string', ...(description ? { description } : {}), ...extra });
export const int = (description?: string, extra: Schema = {}): Schema => ({ type: 'integer', ...(description ? { description } : {}), ...extra });
export const num = (description?: string, extra: Schema = {}): Schema => ({ type: 'number', ...(description ? { description } : {}), ...extra });
export const bool = (description?: string): Schema => ({ type: 'boolean', ...(description ? { description } : {}) });
/** Money and points: integers in minor units (cents, paise), never floats. */
export const cents = (description: string, extra: Schema = {}): Schema => ({ type: 'integer', description: `${description} (integer, minor units)`, ...extra });
export const dateTime = (description?: string): Schema => str(description, { format: 'date-time' });
export const enumOf = (values: readonly string[], description?: string): Schema => str(description, { enum: [...values] });
export const id = (prefix: string, description?: string): Schema =>
  str(description, { pattern: `^${prefix}-[0-9A-HJKMNP-TV-Z]{26}$`, examples: [`${prefix}-01JD8X3Q7R5V2M9K4T6W8Y0ZAB`] });
export const arrayOf = (items: Schema, extra: Schema = {}): Schema => ({ type: 'array', items, ...extra });

/** Adds null to a schema's type (or wraps a $ref in oneOf). */
export const nullable = (s: Schema): Schema => {
  if ('$ref' in s) return { oneOf: [s, { type: 'null' }] };
  const { examples: _examples, ...rest } = s;
  const t = s.type;
  const withNull: Schema = { ...rest, type: Array.isArray(t) ? [...t, 'null'] : [t, 'null'] };
  // an enum must list null too, or JSON Schema refuses the null that the type allows
  if (Array.isArray(s.enum)) withNull.enum = [...(s.enum as unknown[]), null];
  return withNull;
};

/**
 * An object whose properties are all present in the response (`required` lists every property
 * unless it is named in `optional`). Unknown extra fields may appear later (clients ignore them).
 */
export const obj = (properties: Record<string, Schema>, opts: { description?: string; optional?: string[]; title?: string } = {}): Schema => {
  const optional = new Set(opts.optional ?? []);
  return {
    type: 'object',
    ...(opts.title ? { title: opts.title } : {}),
    ...(opts.description ? { description: opts.description } : {}),
    required: Object.keys(properties).filter((k) => !optional.has(k)),
    properties,
  };
};

/** A free-form object with tenant-defined keys (tier benefits). */
export const freeForm = (description: string): Schema => ({ type: 'object', description, additionalProperties: true });
