import { KAFKAJS_COMMIT_INTERVAL_FIX_VERSION, kafkajsCommitIntervalFixApplied } from './kafkajs-commit-interval';

const Runner = require('kafkajs/src/consumer/runner') as { prototype: { autoCommitOffsets(this: object): Promise<void> | undefined } };
const OffsetManager = require('kafkajs/src/consumer/offsetManager') as new (o: object) => { commitOffsetsIfNecessary(): Promise<void>; lastCommit: number };

/** A runner as kafkajs builds it, reduced to what `autoCommitOffsets` reads; records what it asked the group to commit. */
const runner = (interval: number | null, autoCommit = true) => {
  const calls: string[] = [];
  const offsetManager = new OffsetManager({ cluster: { committedOffsets: () => ({}) }, topicConfigurations: [], instrumentationEmitter: {}, memberAssignment: {}, autoCommitInterval: interval, autoCommitThreshold: null, groupId: 'g', generationId: 1, memberId: 'm' });
  offsetManager.lastCommit = Date.now();
  const consumerGroup = {
    offsetManager,
    commitOffsets: async () => { calls.push('commit'); },
    commitOffsetsIfNecessary: async () => { calls.push('if-necessary'); },
  };
  return { calls, self: { autoCommit, consumerGroup } };
};

describe('kafkajs commit interval fix (Runner.autoCommitOffsets)', () => {
  it('is applied to the kafkajs this service installs', () => {
    expect(require('kafkajs/package.json').version).toBe(KAFKAJS_COMMIT_INTERVAL_FIX_VERSION);
    expect(kafkajsCommitIntervalFixApplied).toBe(true);
  });

  it('a consumer run with autoCommitInterval commits after a batch only when the interval says so', async () => {
    const r = runner(1_000);
    await Runner.prototype.autoCommitOffsets.call(r.self);
    expect(r.calls).toEqual(['if-necessary']);
  });

  it('a consumer run without an interval or threshold still commits after every batch (the services\' request consumers)', async () => {
    const r = runner(null);
    await Runner.prototype.autoCommitOffsets.call(r.self);
    expect(r.calls).toEqual(['commit']);
  });

  it('a consumer run with autoCommit false commits nothing', async () => {
    const r = runner(1_000, false);
    await Runner.prototype.autoCommitOffsets.call(r.self);
    expect(r.calls).toEqual([]);
  });
});
