import 'reflect-metadata';
import { DEFAULT_SETTINGS } from '@loyalty/contracts';
import { ProblemError } from '@loyalty/platform';
import { validationPipe } from '../http/validation';
import { CreateProgramDto, PatchProgramDto } from './admin.dto';

const errorsOf = async (metatype: new () => unknown, value: unknown) => {
  try {
    await validationPipe().transform(value, { type: 'body', metatype });
    return [];
  } catch (e) {
    if (!(e instanceof ProblemError)) throw e;
    return (e.problem.errors ?? []).map((x) => x.path).sort();
  }
};

describe('admin programme DTOs', () => {
  it('accept every programme setting the contracts define (the DTO keeps up with ProgramSettings)', async () => {
    const settings = { ...DEFAULT_SETTINGS, write_off_after_days: 90, referral_link_template: 'https://shop.example/r/{code}', expiry: { policy: 'end_of_period', period: 'year' } };
    expect(await errorsOf(CreateProgramDto, { program_name: 'P', currency_name: 'pts', settings })).toEqual([]);
    expect(await errorsOf(PatchProgramDto, { settings: DEFAULT_SETTINGS })).toEqual([]);
  });

  it('refuse unknown and mistyped settings with a path to each', async () => {
    expect(await errorsOf(PatchProgramDto, { settings: { earn_on: 'order.shipped', voucher_ttl_seconds: 0, nope: true } }))
      .toEqual(['/settings/earn_on', '/settings/nope', '/settings/voucher_ttl_seconds']);
    expect(await errorsOf(PatchProgramDto, { settings: { expiry: { policy: 'fixed_days', days: 0 } } })).toEqual(['/settings/expiry/days']);
    expect(await errorsOf(PatchProgramDto, { settings: 'x' })).toEqual(['/settings']);
  });

  it('refuse rates finer than a basis point and multipliers finer than 1/10,000', async () => {
    expect(await errorsOf(CreateProgramDto, { program_name: 'P', currency_name: 'pts', rules: [{ type: 'base', earn_rate_pct: 1.25 }] })).toEqual([]);
    expect(await errorsOf(CreateProgramDto, { program_name: 'P', currency_name: 'pts', rules: [{ type: 'base', earn_rate_pct: 1.255 }] })).toEqual(['/rules/0/earn_rate_pct']);
    expect(await errorsOf(CreateProgramDto, { program_name: 'P', currency_name: 'pts', tiers: [{ name: 'G', level: 1, earn_multiplier: 1.2345 }] })).toEqual([]);
    expect(await errorsOf(CreateProgramDto, { program_name: 'P', currency_name: 'pts', tiers: [{ name: 'G', level: 1, earn_multiplier: 1.23456 }] })).toEqual(['/tiers/0/earn_multiplier']);
  });

  it('require ISO 8601 campaign windows', async () => {
    expect(await errorsOf(CreateProgramDto, { program_name: 'P', currency_name: 'pts', rules: [{ type: 'campaign', starts_at: '2025-01-01T00:00:00Z', ends_at: '2025-02-01T00:00:00.000Z' }] })).toEqual([]);
    expect(await errorsOf(CreateProgramDto, { program_name: 'P', currency_name: 'pts', rules: [{ type: 'campaign', starts_at: 'soon' }] })).toEqual(['/rules/0/starts_at']);
  });
});
