import { Pool, PoolClient } from 'pg';
import { MemberView, PATTERNS, ReferralEvent, referralStreamId } from '@loyalty/contracts';
import { CommandHandler, ReadModels, decideOn } from '@loyalty/event-store';
import { CommandBus } from '@loyalty/messaging';
import { deterministicUuid, inTransaction, notFound } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import { ReferralState, referralEvolver } from '@loyalty/domain-referral';
import { applyReferralEvent } from './projections/referral.projection';

/**
 * The referral service's read models (its one runner) under the house's read-your-writes policy:
 * a catch-up waits for every event committed so far, by any process (orders and codes of other
 * services: an order the ledger just completed while another transaction is open counts).
 */
export class ReferralReadModels extends ReadModels {}

/** The service's decisions on referral streams, with its own rows updated before each reply. */
export class ReferralDecisions {
  constructor(private readonly handler: CommandHandler, private readonly pool: Pool) {}

  async load(tenant: string, friendId: string): Promise<ReferralState> {
    return (await this.handler.load(referralStreamId(tenant, friendId), referralEvolver)).state;
  }

  /**
   * Runs a decision on a referral stream (load → decide → append with the expected revision →
   * retry on conflict). Each event kind happens at most once per referral, so its id is derived
   * from the stream and kind: a retry anywhere appends nothing twice. The command's own events go
   * into the read model before this returns (read-your-writes without waiting for the runner), in
   * `tx` when the caller is a projection's transaction.
   */
  async decide(tenant: string, friendId: string, decide: (s: ReferralState) => ReferralEvent[], tx?: PoolClient): Promise<ReferralState> {
    const streamId = referralStreamId(tenant, friendId);
    const out = await decideOn(this.handler, streamId, referralEvolver, (s) => ({
      events: decide(s).map((e) => ({ ...e, id: deterministicUuid(`${streamId}|${e.type}`) })), result: null,
    }));
    const appended = out.events;
    if (out.append && appended.length) {
      const first = out.append.nextRevision - BigInt(appended.length) + 1n;
      const project = async (db: Pick<PoolClient, 'query'>) => {
        for (const [i, e] of appended.entries()) await applyReferralEvent(db, streamId, first + BigInt(i), e);
      };
      if (tx) await project(tx);
      else await inTransaction(this.pool, project);
    }
    return out.state;
  }
}

/** The programme's clock now (ISO). */
export const programmeNow = async (programs: ProgramStore, tenant: string): Promise<string> => (await programs.now(tenant)).toISOString();

/** A member as the ledger shows it (any accepted id form); 404 for unknown, deleted or anonymised members. */
export const ledgerMember = async (bus: CommandBus, tenant: string, raw: string): Promise<MemberView> => {
  const m = await bus.request<MemberView>(PATTERNS.ledger.get, { tenant, id: raw }, raw);
  if (m.state === 'deleted' || m.state === 'anonymised') throw notFound('member');
  return m;
};
