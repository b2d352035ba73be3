import { Transport } from '@nestjs/microservices';
import type { ProducerBatch, RecordMetadata } from '@nestjs/microservices/external/kafka.interface';
import { ProblemError } from '@loyalty/platform';
import {
  JsonKafkaRequestDeserializer,
  KafkaBus,
  kafkaServerOptions,
  kafkaTopicsFor,
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
  it('names request and reply topics', () => {
    expect(kafkaTopicsFor(['a.b', 'a.b', 'c'])).toEqual(['a.b', 'a.b.reply', 'c', 'c.reply']);
  });

  it('refuses a pattern it was not built with, before touching Kafka', async () => {
    const bus = new KafkaBus(['127.0.0.1:1'], 'unit', ['ledger.member.enrol']);
    const e = await bus.request('redemption.redeem', {}).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(ProblemError);
    expect((e as ProblemError).problem.slug).toBe('internal');
  });
});
