import { randomUUID } from 'node:crypto';
import { FakeEventStoreDBClient, eventually } from '@loyalty/testing';
import { runEventStoreContract } from './event-store.contract';
import { RecordedEvent, START } from './event-store.port';
import { EventStoreDBEventStore } from './eventstoredb.event-store';

/**
 * The adapter's own logic (revision mapping, exclusive $all paging, system events, read-back positions,
 * batching, redelivery, resubscription) against an in-memory fake of the client. This proves the
 * adapter, not the server: eventstoredb.event-store.int-spec.ts runs the contract on a real
 * EventStoreDB when EVENTSTORE_URL is set.
 */
runEventStoreContract('EventStoreDB adapter over an in-memory fake client (not a server)', async () => {
  const fake = new FakeEventStoreDBClient();
  const store = new EventStoreDBEventStore(fake.asClient(), { retryMs: 20 });
  return { store, cleanup: () => store.close() };
});

describe('EventStoreDBEventStore specifics (fake client)', () => {
  it('resumes after the server drops its subscription, with no repeats and no gaps, and never surfaces system events', async () => {
    const fake = new FakeEventStoreDBClient();
    const store = new EventStoreDBEventStore(fake.asClient(), { retryMs: 10 });
    const seen: RecordedEvent[] = [];
    const errors: unknown[] = [];
    const sub = store.subscribe({ from: START, batchSize: 4, onEvents: async (e) => { seen.push(...e); }, onError: (e) => errors.push(e) });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const id = randomUUID();
      ids.push(id);
      await store.append(`member-${i % 3}`, [{ id, type: 'E', data: { i } }], 'any');
    }
    await eventually(() => expect(seen).toHaveLength(10));
    fake.dropSubscriptions();
    for (let i = 10; i < 20; i++) {
      const id = randomUUID();
      ids.push(id);
      await store.append(`member-${i % 3}`, [{ id, type: 'E', data: { i } }], 'any');
    }
    await eventually(() => expect(seen.map((e) => e.id)).toEqual(ids));
    expect(errors).toHaveLength(1);
    expect(seen.some((e) => e.type.startsWith('$') || e.streamId.startsWith('$'))).toBe(false);
    await sub.stop();
    expect((await store.headPosition())).toEqual(seen[seen.length - 1].position);
    await store.close();
  });
});
