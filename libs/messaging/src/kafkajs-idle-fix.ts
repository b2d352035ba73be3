/**
 * kafkajs 2.2.4 spins while idle: `RequestQueue.scheduleCheckPendingRequests` arms a timer after
 * every check, even when no request is pending, with a negative delay (`throttledUntil` is -1
 * when there is no throttling), so each broker connection re-checks an empty queue every
 * millisecond for as long as it is open (upstream issue tulios/kafkajs#1556, fixes proposed in
 * #1667 and #1703, no release since). Measured on this machine: an idle six-process topology
 * used a third of a core (each service 3.6 %, the gateway 6 %, mostly this loop and its timers).
 *
 * The fix is upstream's: no timer when nothing is pending. A request that cannot be sent at once
 * is queued by `push`, which schedules the check; every fulfilled or timed-out request checks the
 * queue again; and a throttled queue with pending requests is still checked when the throttle ends
 * (or after 10 ms, kafkajs' own interval, when that moment is already past).
 *
 * Applied once, on import, and only to the version it was written against: a kafkajs upgrade
 * leaves its own code alone (and `kafkajs-idle-fix.spec.ts` then says so).
 */
 
const { version } = require('kafkajs/package.json') as { version: string };

interface RequestQueueInternals {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

/** kafkajs' CHECK_PENDING_REQUESTS_INTERVAL (ms): how soon a non-empty queue is checked again when the throttle is already over. */
const CHECK_PENDING_REQUESTS_INTERVAL = 10;

export const KAFKAJS_IDLE_FIX_VERSION = '2.2.4';

/** Whether the installed kafkajs got the fix (false after an upgrade: re-check upstream before extending the version). */
export const kafkajsIdleFixApplied: boolean = (() => {
  if (version !== KAFKAJS_IDLE_FIX_VERSION) return false;
   
  const RequestQueue = require('kafkajs/src/network/requestQueue') as { prototype: RequestQueueInternals };
  RequestQueue.prototype.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueueInternals): void {
    if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
    const throttledFor = this.throttledUntil - Date.now();
    this.throttleCheckTimeoutId = setTimeout(() => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    }, throttledFor > 0 ? throttledFor : CHECK_PENDING_REQUESTS_INTERVAL);
  };
  return true;
})();
