import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as earning from '@loyalty/domain-earning';
import { aRule, aTier } from './testing/program.fixture';

describe('@loyalty/domain-earning public API', () => {
  it('given the package entry point when imported then the binding function names are exported', () => {
    const required = [
      'computeEarnings',
      'signupBonus',
      'refundTakeBack',
      'splitTakeBack',
      'computeExpiresAt',
      'inactivityExpiryAt',
      'tierWindowStart',
      'qualifies',
      'evaluateTier',
      'sumActivityInWindow',
      'toBasisPoints',
      'applyBps',
    ];
    for (const name of required) {
      expect(typeof (earning as Record<string, unknown>)[name]).toBe('function');
    }
  });

  it('given an order through the entry point when earned and refunded then the pieces compose', () => {
    const [line] = earning.computeEarnings({
      grossCents: 20_000,
      rules: [aRule({ id: 'R1', earn_rate_pct: 2.5, expiry_months: 12 })],
      tierMultiplier: earning.evaluateTier([aTier({ earn_multiplier: 2 })], () => ({ spend: 0, points: 0, orders: 0 }))
        ?.earn_multiplier ?? 1,
      at: '2024-01-31T09:00:00.000Z',
      campaignIssuedCents: {},
    });
    expect(line?.amount_cents).toBe(1_000);
    const expiresAt = earning.computeExpiresAt({ policy: 'none' }, line?.expiry_months ?? null, '2024-01-31T09:00:00.000Z');
    expect(expiresAt).toBe('2025-01-31T09:00:00.000Z');
    const takeBack = earning.refundTakeBack(1_000, 5_000, 20_000, 0);
    expect(earning.splitTakeBack(takeBack, 0, 1_000)).toEqual({ fromPending: 0, fromPosted: 250 });
  });
});

describe('purity of the domain library', () => {
  const sources = readdirSync(__dirname, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.spec.ts'))
    .map((file) => ({ file, text: readFileSync(join(__dirname, file), 'utf8') }));

  it.each([
    ['Date.now(', /Date\.now\s*\(/],
    ['new Date() without arguments', /new Date\s*\(\s*\)/],
    ['Math.random', /Math\.random/],
    ['@nestjs', /@nestjs/],
    ['node: or fs imports', /from ['"](node:|fs|path|http|https|net|child_process)['"/]/],
    ['process.', /\bprocess\./],
    ['non-type imports of @loyalty/contracts', /^import (?!type )[^;]*from '@loyalty\/contracts'/m],
  ])('no source file uses %s', (_label, pattern) => {
    expect(sources.length).toBeGreaterThan(10);
    expect(sources.filter(({ text }) => pattern.test(text)).map(({ file }) => file)).toEqual([]);
  });

  it('every switch in the sources ends with an assertNever exhaustiveness check', () => {
    for (const { file, text } of sources) {
      const switches = text.match(/switch \(/g)?.length ?? 0;
      const guards = text.match(/default:\s*\n\s*return assertNever\(/g)?.length ?? 0;
      expect({ file, guards }).toEqual({ file, guards: switches });
    }
  });
});
