/**
 * kafkajs 2.2.4 commits a consumer's offsets after every batch it processes, whatever
 * `autoCommitInterval` says: `Runner.processEachMessage`/`processEachBatch` end with
 * `autoCommitOffsets()`, an unconditional OffsetCommit, so the interval only adds commits and
 * never saves one. A consumer that gets one message per fetch (a caller's replies) thus sends the
 * broker an OffsetCommit per message.
 *
 * The fix: a consumer run with `autoCommitInterval` or `autoCommitThreshold` commits after a batch
 * only when that interval or threshold is reached (kafkajs' own `commitOffsetsIfNecessary`, which
 * it already calls after each message). A consumer run without either keeps kafkajs' commit after
 * every batch: the services' request consumers do (a request handled but not committed is handled
 * again by the next owner of its partition after a crash, so that window stays one batch).
 *
 * Applied once, on import, and only to the version it was written against: a kafkajs upgrade
 * leaves its own code alone (and `kafkajs-commit-interval.spec.ts` then says so).
 */

const { version } = require('kafkajs/package.json') as { version: string };

interface OffsetManagerInternals { autoCommitInterval: number | null; autoCommitThreshold: number | null }
interface RunnerInternals {
  autoCommit: boolean;
  consumerGroup: { offsetManager?: OffsetManagerInternals; commitOffsetsIfNecessary(): Promise<void> } | null;
  autoCommitOffsets(): Promise<void> | undefined;
}

export const KAFKAJS_COMMIT_INTERVAL_FIX_VERSION = '2.2.4';

/** Whether the installed kafkajs got the fix (false after an upgrade: re-check upstream before extending the version). */
export const kafkajsCommitIntervalFixApplied: boolean = (() => {
  if (version !== KAFKAJS_COMMIT_INTERVAL_FIX_VERSION) return false;
  const Runner = require('kafkajs/src/consumer/runner') as { prototype: RunnerInternals };
  const commitAfterEveryBatch = Runner.prototype.autoCommitOffsets;
  Runner.prototype.autoCommitOffsets = function autoCommitOffsets(this: RunnerInternals): Promise<void> | undefined {
    const offsets = this.consumerGroup?.offsetManager;
    if (this.autoCommit && offsets && (offsets.autoCommitInterval != null || offsets.autoCommitThreshold != null)) {
      return this.consumerGroup!.commitOffsetsIfNecessary();
    }
    return commitAfterEveryBatch.call(this);
  };
  return true;
})();
