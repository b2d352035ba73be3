/** ±20 % jitter around each step of the retry schedule (decisions §8). */
export const JITTER = 0.2;

/**
 * Delay before the next attempt after failed attempt number `attempt` (1-based), in ms, or null
 * when the schedule (seconds between attempts) is used up. `random` is in [0, 1).
 */
export const retryDelayMs = (attempt: number, scheduleSeconds: number[], random: () => number = Math.random): number | null => {
  if (!Number.isInteger(attempt) || attempt < 1 || attempt > scheduleSeconds.length) return null;
  const base = Math.max(0, scheduleSeconds[attempt - 1]) * 1000;
  const factor = 1 - JITTER + 2 * JITTER * random();
  return Math.round(base * factor);
};
