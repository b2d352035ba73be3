import { Logger } from '@nestjs/common';
import { KafkaContext, Transport } from '@nestjs/microservices';
import { EachMessagePayload, IHeaders, KafkaJSNumberOfRetriesExceeded } from 'kafkajs';
import type { ProducerBatch, RecordMetadata } from '@nestjs/microservices/external/kafka.interface';
import { ProblemError } from '@loyalty/platform';
import {
  JsonKafkaRequestDeserializer,
  KafkaBus,
  kafkaServerOptions,
  kafkaTopicsFor,
  onRequestTopic,
  ownerTopicOf,
  PATTERN_HEADER,
  replyTopicOf,
  OrderedSendQueue,
  TopicCreatingServerKafka,
} from './kafka.transport';

const meta = (topicName: string): RecordMetadata => ({ topicName, partition: 0, errorCode: 0 });

describe('OrderedSendQueue', () => {
  it('keeps one send in flight and sends what queued meanwhile as one batch, in call order', async () => {
    const batches: ProducerBatch[] = [];
    let release: () => void = () => undefined;
    const queue = new OrderedSendQueue(async (batch) => {
      batches.push(batch);
      if (batches.length === 1) await new Promise<void>((r) => (release = r));
      return (batch.topicMessages ?? []).map((t) => meta(t.topic));
    });
    const first = queue.send({ topic: 'a', messages: [{ key: 'k', value: '0' }], acks: -1 });
    const rest = [1, 2, 3].map((n) => queue.send({ topic: n === 2 ? 'b' : 'a', messages: [{ key: 'k', value: String(n) }], acks: -1 }));
    await new Promise((r) => setImmediate(r));
    expect(batches).toHaveLength(1); // the others wait for the first produce
    release();
    await expect(first).resolves.toEqual([meta('a')]);
    await expect(Promise.all(rest)).resolves.toEqual([[meta('a'), meta('a')], [meta('b')], [meta('a'), meta('a')]]);
    expect(batches).toHaveLength(2);
    expect(batches[1].acks).toBe(-1);
    expect(batches[1].topicMessages?.map((t) => `${t.topic}:${t.messages[0].value}`)).toEqual(['a:1', 'b:2', 'a:3']);
  });

  it('rejects every send of a failed batch and carries on with the next one', async () => {
    let calls = 0;
    const queue = new OrderedSendQueue(async (batch) => {
      calls += 1;
      if (calls === 1) throw new Error('broker said no');
      return (batch.topicMessages ?? []).map((t) => meta(t.topic));
    });
    await expect(queue.send({ topic: 'a', messages: [{ value: 'x' }] })).rejects.toThrow('broker said no');
    await expect(queue.send({ topic: 'a', messages: [{ value: 'y' }] })).resolves.toEqual([meta('a')]);
  });
});

describe('JsonKafkaRequestDeserializer', () => {
  const d = new JsonKafkaRequestDeserializer();
  const data = (value: unknown) => d.deserialize({ value }, { channel: 'ledger.member.enrol' });

  it('parses any JSON value and names the pattern after the topic', () => {
    expect(data(Buffer.from('{"a":1}'))).toEqual({ pattern: 'ledger.member.enrol', data: { a: 1 } });
    expect(data(Buffer.from('42')).data).toBe(42);
    expect(data(Buffer.from('"42"')).data).toBe('42');
    expect(data(Buffer.from('null')).data).toBeNull();
    expect(data(null).data).toBeNull(); // not the raw Kafka message, as Nest's default does
  });

  it('leaves a value that is not JSON as a string', () => {
    expect(data(Buffer.from('hello')).data).toBe('hello');
  });
});

describe('kafkaServerOptions', () => {
  it('uses the group id verbatim, consumes partitions concurrently, bounds idle polls and starts new partitions at the earliest request', () => {
    const o = kafkaServerOptions(['127.0.0.1:9092'], 'loyalty-ledger', 'ledger-1');
    expect(o.transport).toBe(Transport.KAFKA);
    expect(o.options?.postfixId).toBe('');
    expect(o.options?.consumer).toMatchObject({ groupId: 'loyalty-ledger', allowAutoTopicCreation: true });
    // an idle long-poll is bounded (a fetch returns as soon as a request arrives, whatever this is)
    expect(o.options?.consumer?.maxWaitTimeInMs).toBeLessThanOrEqual(1_000);
    // a partition the group never committed on starts at its earliest request, not the log end
    expect(o.options?.subscribe).toEqual({ fromBeginning: true });
    expect(o.options?.run?.partitionsConsumedConcurrently).toBeGreaterThan(1);
    expect(o.options?.client).toMatchObject({ clientId: 'ledger-1', brokers: ['127.0.0.1:9092'] });
    // Served by a ServerKafka that creates its topics before subscribing (Nest prefers `strategy`).
    expect(o.strategy).toBeInstanceOf(TopicCreatingServerKafka);
  });

  it('returns fresh objects (Nest mutates its options)', () => {
    const a = kafkaServerOptions(['b:9092'], 'g', 'c');
    const b = kafkaServerOptions(['b:9092'], 'g', 'c');
    expect(a.options?.consumer).not.toBe(b.options?.consumer);
  });
});

describe('KafkaBus without a broker', () => {
  it('names one request topic per owner (the pattern\'s first segment), and one reply topic per caller for all of them', () => {
    expect(ownerTopicOf('ledger.member.enrol')).toBe('ledger.commands');
    expect(ownerTopicOf('ledger.events.process', 'events')).toBe('ledger.events');
    expect(ownerTopicOf('solo')).toBe('solo.commands');
    expect(kafkaTopicsFor(['a.b', 'a.c', 'c'])).toEqual(['a.commands', 'c.commands']);
    expect(kafkaTopicsFor(['a.b', 'a.c'], (p) => p)).toEqual(['a.b', 'a.c']);
    expect(new KafkaBus(['127.0.0.1:1'], 'loyalty-gateway-42', ['a.b', 'c']).replyTopic).toBe('loyalty-gateway-42.replies');
    expect(new KafkaBus(['127.0.0.1:1'], 'loyalty-gateway-42', ['a.b'], { groupId: 'gw' }).replyTopic).toBe('gw.replies');
    expect(new KafkaBus(['127.0.0.1:1'], 'loyalty-gateway-42', ['a.b'], { replyTopic: replyTopicOf('loyalty-gateway') }).replyTopic).toBe('loyalty-gateway.replies');
  });

  it('refuses a pattern it was not built with, before touching Kafka', async () => {
    const bus = new KafkaBus(['127.0.0.1:1'], 'unit', ['ledger.member.enrol']);
    const e = await bus.request('redemption.redeem', {}).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(ProblemError);
    expect((e as ProblemError).problem.slug).toBe('internal');
  });
});

/** A stand-in for a kafkajs consumer: records listeners so a test can fire CRASH itself. */
const fakeConsumer = () => {
  const listeners = new Map<string, ((e: unknown) => void)[]>();
  const events = { CONNECT: 'consumer.connect', DISCONNECT: 'consumer.disconnect', REBALANCING: 'consumer.rebalancing', STOP: 'consumer.stop', CRASH: 'consumer.crash', GROUP_JOIN: 'consumer.group_join' };
  return {
    events,
    on: (name: string, fn: (e: unknown) => void) => { listeners.set(name, [...(listeners.get(name) ?? []), fn]); return () => undefined; },
    disconnect: jest.fn(async () => undefined),
    crash: (restart: boolean) => { for (const fn of listeners.get(events.CRASH) ?? []) fn({ payload: { error: new Error('The coordinator is not aware of this member'), groupId: 'g', restart } }); },
  };
};

describe('TopicCreatingServerKafka (issue 8: a service survives a broker outage)', () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['error', 'warn']));

  it('drops a reply it cannot send with a warning, instead of rejecting (an unhandled rejection ended the process)', async () => {
    const server = kafkaServerOptions(['127.0.0.1:1'], 'g', 'c').strategy;
    const send = jest.fn(async () => { throw new KafkaJSNumberOfRetriesExceeded(new Error('Connection error: connect ECONNREFUSED'), { retryCount: 10, retryTime: 3000 }); });
    Object.assign(server, { producer: { send } });
    const sent = server.sendMessage({ id: 'corr-1', response: { ok: true } }, 'ledger.event.process.reply', '0', 'corr-1', {} as KafkaContext);
    await expect(sent).resolves.toEqual([]);
    expect(send).toHaveBeenCalledTimes(1);
  });

  it('starts its consumer again when kafkajs gives up on it (CRASH without restart), and only then', async () => {
    const server = kafkaServerOptions(['127.0.0.1:1'], 'g', 'c').strategy;
    const consumer = fakeConsumer();
    const listen = jest.spyOn(server, 'listen').mockImplementation(async (cb: (err?: unknown) => void) => { cb(); });
    Object.assign(server, { consumer });
    (server as unknown as { registerConsumerEventListeners(): void }).registerConsumerEventListeners();

    consumer.crash(true); // kafkajs restarts it itself
    expect(server.recovery).toBeNull();
    consumer.crash(false);
    expect(server.recovery).not.toBeNull();
    await server.recovery;
    expect(consumer.disconnect).toHaveBeenCalled();
    expect(listen).toHaveBeenCalledTimes(1);
  });

  it('keeps trying to start the consumer again, with backoff, until it works', async () => {
    const server = kafkaServerOptions(['127.0.0.1:1'], 'g', 'c').strategy;
    const consumer = fakeConsumer();
    let calls = 0;
    const listen = jest.spyOn(server, 'listen').mockImplementation(async (cb: (err?: unknown) => void) => { calls += 1; cb(calls < 3 ? new Error('Connection error: connect ECONNREFUSED') : undefined); });
    Object.assign(server, { consumer });
    (server as unknown as { registerConsumerEventListeners(): void }).registerConsumerEventListeners();
    consumer.crash(false);
    await server.recovery;
    expect(listen).toHaveBeenCalledTimes(3);
  });

  it('does not restart a consumer it is closing', async () => {
    const server = kafkaServerOptions(['127.0.0.1:1'], 'g', 'c').strategy;
    const consumer = fakeConsumer();
    const listen = jest.spyOn(server, 'listen').mockImplementation(async (cb: (err?: unknown) => void) => { cb(); });
    Object.assign(server, { consumer });
    (server as unknown as { registerConsumerEventListeners(): void }).registerConsumerEventListeners();
    await server.close();
    consumer.crash(false);
    expect(server.recovery).toBeNull();
    expect(listen).not.toHaveBeenCalled();
  });
});

describe('shared request topics', () => {
  it('a request Nest addresses to its pattern goes on the pattern\'s request topic, the pattern in a header', () => {
    const record = { topic: 'ledger.member.enrol', acks: -1, messages: [{ key: 'k', value: '{}', headers: { 'kafka_correlationId': 'c1' } }] };
    const routed = onRequestTopic(record, ownerTopicOf);
    expect(routed.topic).toBe('ledger.commands');
    expect(routed.acks).toBe(-1);
    expect(routed.messages).toEqual([{ key: 'k', value: '{}', headers: { 'kafka_correlationId': 'c1', [PATTERN_HEADER]: 'ledger.member.enrol' } }]);
    expect(record.messages[0].headers).not.toHaveProperty(PATTERN_HEADER); // Nest's record is not changed
    // a topic that is already its own request topic (legacy mapping) is sent as it is
    expect(onRequestTopic(record, (p) => p)).toBe(record);
  });

  it('the server hands each request to the handler its header names, or (legacy topics) its topic names', async () => {
    const server = kafkaServerOptions(['127.0.0.1:1'], 'g', 'c').strategy;
    const seen: string[] = [];
    const base = Object.getPrototypeOf(TopicCreatingServerKafka.prototype) as { handleMessage(p: { topic: string }): Promise<unknown> };
    const spy = jest.spyOn(base, 'handleMessage').mockImplementation(async (p) => { seen.push(p.topic); });
    try {
      const payload = (topic: string, headers: IHeaders): EachMessagePayload => ({
        topic, partition: 0, message: { key: null, value: Buffer.from('{}'), headers, offset: '0', timestamp: '0', attributes: 0 },
        heartbeat: async () => undefined, pause: () => () => undefined,
      });
      await server.handleMessage(payload('ledger.commands', { [PATTERN_HEADER]: Buffer.from('ledger.member.enrol') }));
      await server.handleMessage(payload('ledger.member.get', {}));
      expect(seen).toEqual(['ledger.member.enrol', 'ledger.member.get']);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('KafkaBus when kafkajs gives up on its reply consumer (issue 8)', () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['error', 'warn']));

  const withFakeConsumer = (bus: KafkaBus) => {
    const consumer = fakeConsumer();
    const client = (bus as unknown as { client: { _consumer: unknown; registerConsumerEventListeners(): void } }).client;
    client._consumer = consumer;
    client.registerConsumerEventListeners();
    return consumer;
  };

  it('connects again (no reply would ever arrive otherwise), failing requests fast meanwhile', async () => {
    const bus = new KafkaBus(['127.0.0.1:1'], 'unit-recover', ['ledger.member.enrol']);
    const consumer = withFakeConsumer(bus);
    let release: () => void = () => undefined;
    const connect = jest.spyOn(bus, 'connect').mockImplementation(() => new Promise<void>((r) => (release = r)));
    consumer.crash(true);
    expect(bus.recovery).toBeNull();
    consumer.crash(false);
    expect(bus.recovery).not.toBeNull();
    await new Promise((r) => setImmediate(r));
    const during = await bus.request('ledger.member.enrol', {}).catch((e: unknown) => e);
    expect(during).toBeInstanceOf(ProblemError);
    expect((during as ProblemError).problem.slug).toBe('unavailable');
    expect((during as ProblemError).message).toMatch(/reconnecting/);
    await new Promise((r) => setTimeout(r, 10));
    release();
    await bus.recovery;
    expect(connect).toHaveBeenCalledTimes(1);
    expect(bus.recovery).toBeNull();
    connect.mockRestore();
  });

  it('a closed bus does not connect again', async () => {
    const bus = new KafkaBus(['127.0.0.1:1'], 'unit-closed', ['ledger.member.enrol']);
    const consumer = withFakeConsumer(bus);
    await bus.close(0);
    const connect = jest.spyOn(bus, 'connect');
    consumer.crash(false);
    expect(bus.recovery).toBeNull();
    expect(connect).not.toHaveBeenCalled();
  });
});
