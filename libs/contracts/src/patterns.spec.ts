import { PATTERNS, requestTopicKind } from './patterns';

describe('request topic kinds', () => {
  const all = Object.values(PATTERNS).flatMap((group) => Object.values(group) as string[]);

  it('keeps the ledger\'s event batches, the reports and the bulk work off the synchronous commands\' topic', () => {
    expect(requestTopicKind(PATTERNS.ledger.processEvents)).toBe('events');
    expect(requestTopicKind(PATTERNS.ledger.financeEntries)).toBe('reads');
    expect(requestTopicKind(PATTERNS.ingest.list)).toBe('reads');
    expect(requestTopicKind(PATTERNS.ledger.migrate)).toBe('bulk');
    expect(requestTopicKind(PATTERNS.webhook.wipe)).toBe('bulk');
    expect(requestTopicKind(PATTERNS.ledger.enrol)).toBe('commands');
    expect(requestTopicKind(PATTERNS.redemption.reserve)).toBe('commands');
    expect(requestTopicKind(PATTERNS.ingest.submit)).toBe('commands');
  });

  it('every sweep and sandbox wipe is bulk work', () => {
    for (const p of all.filter((x) => x.endsWith('.sweep') || x.endsWith('.wipe'))) expect([p, requestTopicKind(p)]).toEqual([p, 'bulk']);
  });
});
