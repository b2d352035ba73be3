import 'reflect-metadata';
import { IsInt, IsString, MetadataStorage, getMetadataStorage, validateSync } from 'class-validator';
import '../admin/admin.dto';
import '../events/events.dto';
import '../finance/finance.dto';
import '../members/members.dto';
import '../redemptions/redemptions.dto';
import '../referrals/referrals.dto';
import '../webhooks/webhooks.dto';
import { memoiseValidationMetadata } from './validation-metadata';

type Lookup = (target: Function, schema: string, always: boolean, strict: boolean, groups?: string[]) => unknown[];

describe('memoised class-validator metadata', () => {
  // the library's own lookup, taken from its prototype (the memo replaces the instance's)
  const storage = getMetadataStorage();
  const original = (MetadataStorage.prototype.getTargetValidationMetadatas as Lookup).bind(storage);
  memoiseValidationMetadata(storage);
  memoiseValidationMetadata(storage); // idempotent: the second call wraps nothing again
  const classes = [...(storage as unknown as { validationMetadatas: Map<Function, unknown[]> }).validationMetadatas.keys()];

  it('gives every registered DTO the rules the library gives it, for each option set, the same array each time', () => {
    expect(classes.length).toBeGreaterThan(20); // 40-odd DTO classes at the time of writing
    const options: [boolean, boolean, string[] | undefined][] = [[false, false, undefined], [true, false, undefined], [false, true, []], [false, false, ['x']]];
    for (const cls of classes) {
      for (const [always, strict, groups] of options) {
        const memo = storage.getTargetValidationMetadatas(cls, '', always, strict, groups);
        expect(memo).toEqual(original(cls, '', always, strict, groups));
        expect(storage.getTargetValidationMetadatas(cls, '', always, strict, groups)).toBe(memo);
        expect(storage.groupByPropertyName(memo)).toBe(storage.groupByPropertyName(memo));
      }
    }
  });

  it('sees a rule registered after a lookup (a class extended later, a decorator applied late)', () => {
    class Late { @IsInt() n!: number }
    const before = storage.getTargetValidationMetadatas(Late, '', false, false);
    expect(before).toHaveLength(1);
    IsString()(Late.prototype, 's');
    const after = storage.getTargetValidationMetadatas(Late, '', false, false);
    expect(after).toHaveLength(2);
    expect(after).toEqual(original(Late, '', false, false));
    const bad = Object.assign(new Late(), { n: 1.5, s: 3 });
    expect(validateSync(bad).map((e) => e.property).sort()).toEqual(['n', 's']);
  });
});
