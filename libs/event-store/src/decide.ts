import { RuleError } from '@loyalty/contracts';
import { ProblemSlug, problem } from '@loyalty/platform';
import { CommandHandler, Decision, Evolver, HandledCommand } from './command-handler';

/** A domain's refusal as the API problem it names; anything else unchanged. */
export const problemOf = (e: unknown): unknown => (e instanceof RuleError ? problem(e.code as ProblemSlug, e.message) : e);

export interface Decided<S, E, R> extends HandledCommand<S, R> {
  /** the events this command appended (none when it appended nothing, or its effect was already recorded) */
  events: E[];
}

/**
 * The one way a service decides on a stream: load (cached state + tail) → decide → append with the
 * expected revision → retry on conflict (CommandHandler), with the domain's refusals mapped to API
 * problems here and nowhere else. The answer names the events appended, so a service that keeps a
 * read model of its own can apply them before it replies (read-your-writes, read-your-writes.ts).
 * `decide` is pure: time and ids come in through the caller's command, drawn before this call.
 */
export const decideOn = async <S, E extends { type: string; data: unknown }, R>(
  handler: CommandHandler,
  streamId: string,
  evolver: Evolver<S, E>,
  decide: (state: S) => Decision<E, R> | Promise<Decision<E, R>>,
): Promise<Decided<S, E, R>> => {
  let appended: E[] = [];
  try {
    // the last decision is the one that was appended (no extra promise when `decide` is synchronous)
    const out = await handler.handle(streamId, evolver, (s) => {
      const d = decide(s);
      if (d instanceof Promise) return d.then((x) => ((appended = x.events), x));
      appended = d.events;
      return d;
    });
    return { ...out, events: out.append ? appended : [] };
  } catch (e) {
    throw problemOf(e);
  }
};
