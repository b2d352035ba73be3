import { PATTERNS, isMemberId } from '@loyalty/contracts';
import { SpendingRules, spendingRules } from '@loyalty/domain-member';
import { CommandBus } from '@loyalty/messaging';
import { ProgramStore } from '@loyalty/programs';

const positiveInt = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : fallback);

export interface SpendingSettings { rules: SpendingRules; voucherTtlSeconds: number; reservationTtlSeconds: number; now: Date }

/**
 * Any accepted member id form (M-…, ref:…, phone:…) → the member id; the ledger owns identity. A
 * member id is its own answer: whether that member exists is for the decision on its stream, which
 * refuses a member that does not (404 `member not found`, as the ledger's look-up did), so the common
 * case asks the ledger nothing (a request on the bus per redemption: over Kafka, a round trip).
 */
export const resolveMember = async (bus: CommandBus, tenant: string, raw: string): Promise<string> => {
  if (isMemberId(raw)) return raw;
  const r = await bus.request<{ member_id: string }>(PATTERNS.ledger.resolveId, { tenant, id: raw }, raw);
  return r.member_id;
};

/** The programme's redemption settings (decisions §6) and its clock, read together. */
export const spendingSettings = async (programs: ProgramStore, tenant: string): Promise<SpendingSettings> => {
  const [program, now] = await Promise.all([programs.readOnlyForTenant(tenant), programs.now(tenant)]);
  return {
    rules: spendingRules(program.settings),
    voucherTtlSeconds: positiveInt(program.settings.voucher_ttl_seconds, 259_200),
    reservationTtlSeconds: positiveInt(program.settings.reservation_ttl_seconds, 900),
    now,
  };
};
