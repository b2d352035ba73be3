import type { RecordedEvent } from '@loyalty/event-store';
import type { EntryData } from '@loyalty/domain-member';
import { METRICS } from '@loyalty/platform';

const KIND: Partial<Record<EntryData['type'], 'issued' | 'redeemed' | 'expired'>> = { earn: 'issued', redeem: 'redeemed', expire: 'expired' };

/**
 * `loyalty_points_total{kind, mode}` (issue 11): points issued (earn entries, pending ones
 * included), redeemed and expired, in minor units, counted as the ledger's runner commits the
 * entries (once per event across replicas: only the runner that applies a batch counts it; a rebuild
 * counts again). Streams are `member-<tenant>-<id>`; a sandbox tenant ends in `_test`.
 */
export const countPoints = (events: readonly RecordedEvent[]): void => {
  for (const e of events) {
    if (e.type !== 'EntryRecorded') continue;
    const entry = e.data as EntryData;
    const kind = KIND[entry.type];
    if (!kind || !entry.amount_cents) continue;
    const mode = e.streamId.includes('_test-') ? 'test' : 'live';
    METRICS.points.inc({ kind, mode }, Math.abs(entry.amount_cents));
  }
};
