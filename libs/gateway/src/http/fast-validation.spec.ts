import 'reflect-metadata';
import fc from 'fast-check';
import { plainToInstance } from 'class-transformer';
import { IsString, MaxLength, getMetadataStorage, validateSync } from 'class-validator';
import * as admin from '../admin/admin.dto';
import * as events from '../events/events.dto';
import * as finance from '../finance/finance.dto';
import * as members from '../members/members.dto';
import * as redemptions from '../redemptions/redemptions.dto';
import * as referrals from '../referrals/referrals.dto';
import * as webhooks from '../webhooks/webhooks.dto';
import { FastValidation } from './fast-validation';
import { validationPipe } from './validation';

const MODULES = [admin, events, finance, members, redemptions, referrals, webhooks];
/** Every class of the DTO modules that has validation rules. */
const DTOS: (new () => object)[] = MODULES.flatMap((m) => Object.values(m))
  .filter((v): v is new () => object => typeof v === 'function' && getMetadataStorage().getTargetValidationMetadatas(v, undefined as unknown as string, false, false, undefined).length > 0);

/** class-validator's verdict, with the strictest options any caller uses. */
const slowValid = (cls: new () => object, value: unknown): boolean =>
  validateSync(plainToInstance(cls, structuredClone(value)) as object, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true }).length === 0;

const propertiesOf = (cls: Function): string[] =>
  [...new Set(getMetadataStorage().getTargetValidationMetadatas(cls, undefined as unknown as string, false, false, undefined).map((m) => m.propertyName))];

const ORDER = { type: 'order.paid', id: 'evt-1', order_ref: 'O-1', email: 'a@example.com', gross_cents: 1200, lines: [{ amount_cents: 1200, quantity: 2, tags: ['x'] }], customer: { phone: '+15551234' } };

describe('FastValidation: "certainly valid" never vouches for what class-validator refuses', () => {
  const fast = new FastValidation();

  it('vouches for ordinary valid bodies and refuses to vouch for broken ones', () => {
    expect(fast.isCertainlyValid(events.OrderAmountEventDto, ORDER)).toBe(true);
    expect(slowValid(events.OrderAmountEventDto, ORDER)).toBe(true);
    expect(fast.isCertainlyValid(members.EnrolMemberDto, { email: 'a@example.com' })).toBe(true);
    for (const broken of [
      { ...ORDER, extra: 1 },                                   // unknown field
      { ...ORDER, gross_cents: 1.5 },                           // not an integer
      { ...ORDER, lines: [{ amount_cents: 1, colour: 'red' }] }, // unknown field, nested
      { ...ORDER, lines: [null] },                              // a line that is not an object
      { ...ORDER, customer: 'someone' },                        // nested value not an object
      { ...ORDER, customer: { email: 'not-an-email' } },
      { ...ORDER, order_ref: undefined },                       // required field missing
      { ...ORDER, __proto__: { polluted: true } },
      JSON.parse('{"type":"order.paid","order_ref":"O","gross_cents":1,"__proto__":{"x":1}}'),
      [ORDER], 'text', null, 42,
    ]) {
      expect(fast.isCertainlyValid(events.OrderAmountEventDto, broken)).toBe(false);
    }
  });

  it('agrees with class-validator on random bodies for every DTO (fast ⇒ slow)', () => {
    expect(DTOS.length).toBeGreaterThan(20);
    const scalar = fc.oneof(
      fc.constant(null), fc.boolean(), fc.integer({ min: -5, max: 2_000 }), fc.double({ noNaN: false }), fc.constant(2 ** 60),
      fc.constantFrom('', 'a@example.com', 'x', 'order.paid', 'customer.created', 'live', 'test', 'direct', 'voucher', 'earn', '2025-01-31T12:00:00Z', 'posted', 'https://example.com/hook', '+15551234567'),
      fc.string({ maxLength: 140 }),
    );
    const value = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(fc.constantFrom('email', 'amount_cents', 'phone', 'x', 'tags', 'rate'), tie('v'), { maxKeys: 3 })),
    })).v;
    let vouched = 0;
    for (const cls of DTOS) {
      const keys = [...propertiesOf(cls), 'unknown_field'];
      const body = fc.dictionary(fc.constantFrom(...keys), value, { maxKeys: keys.length });
      fc.assert(fc.property(body, (b) => {
        if (!fast.isCertainlyValid(cls, b)) return true;
        vouched++;
        return slowValid(cls, b);
      }), { numRuns: 300, seed: 7 });
      // valid examples built from the rules' own happy values: each one the check vouches for must pass
      const sample = Object.fromEntries(propertiesOf(cls).map((k) => [k, undefined]));
      if (fast.isCertainlyValid(cls, sample)) expect(slowValid(cls, sample)).toBe(true);
    }
    expect(vouched).toBeGreaterThan(0);
  });

  it('the pipe answers the same class instance either way', async () => {
    const pipe = validationPipe();
    const body = { email: 'a@example.com', marketing_consent: true };
    const out = await pipe.transform(structuredClone(body), { type: 'body', metatype: members.EnrolMemberDto });
    expect(out).toBeInstanceOf(members.EnrolMemberDto);
    expect({ ...(out as object) }).toMatchObject(body);
    await expect(pipe.transform({ email: 'nope' }, { type: 'body', metatype: members.EnrolMemberDto })).rejects.toMatchObject({ status: 422 });
  });

  it('forgets what it compiled when a rule is registered later', () => {
    class Later { name?: string }
    IsString()(Later.prototype, 'name');
    expect(fast.isCertainlyValid(Later, { name: 'x' })).toBe(true);
    MaxLength(1)(Later.prototype, 'name');
    expect(fast.isCertainlyValid(Later, { name: 'xy' })).toBe(false);
    expect(fast.isCertainlyValid(Later, { name: 'x' })).toBe(true);
  });
});
