import { getMetadataStorage } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';

type Storage = ReturnType<typeof getMetadataStorage>;
type Lookup = Storage['getTargetValidationMetadatas'];

const MEMOISED = Symbol.for('loyalty.validation-metadata.memoised');

/**
 * class-validator looks up a class's rules on every `validate` of every object, nested ones
 * included: it filters the class's rules and walks every registered class for inherited ones
 * (`instanceof` against each of the forty-odd DTOs), then groups them by property. That was nearly
 * half of validation's time and about 4 % of the ingest service's busy samples (issue 7). The rules of a class never change once its module is loaded, so
 * each lookup is kept per class and options (and its grouping per result), and forgotten whenever
 * a rule is registered. Idempotent; the results are the library's own, read-only as before.
 */
export const memoiseValidationMetadata = (storage: Storage = getMetadataStorage()): void => {
  const s = storage as Storage & { [MEMOISED]?: true };
  if (s[MEMOISED]) return;
  s[MEMOISED] = true;
  const lookup: Lookup = s.getTargetValidationMetadatas.bind(s);
  const group = s.groupByPropertyName.bind(s);
  const add = s.addValidationMetadata.bind(s);
  let byTarget = new Map<Function | string, Map<string, ValidationMetadata[]>>();
  let grouped = new WeakMap<ValidationMetadata[], { [propertyName: string]: ValidationMetadata[] }>();

  s.addValidationMetadata = (metadata: ValidationMetadata): void => {
    byTarget = new Map();
    grouped = new WeakMap();
    add(metadata);
  };
  s.getTargetValidationMetadatas = (targetConstructor, targetSchema, always, strictGroups, groups) => {
    const key = `${targetSchema}\u0000${always}\u0000${strictGroups}\u0000${groups ? groups.join('\u0001') : '-'}`;
    let forTarget = byTarget.get(targetConstructor);
    if (!forTarget) byTarget.set(targetConstructor, (forTarget = new Map()));
    let found = forTarget.get(key);
    if (!found) forTarget.set(key, (found = lookup(targetConstructor, targetSchema, always, strictGroups, groups)));
    return found;
  };
  s.groupByPropertyName = (metadata: ValidationMetadata[]) => {
    let g = grouped.get(metadata);
    if (!g) grouped.set(metadata, (g = group(metadata)));
    return g;
  };
};
