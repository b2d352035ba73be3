/**
 * A domain's refusal of a command. Every decider throws these (MemberRuleError, ReferralRuleError):
 * `code` is the API problem's slug (interface-spec "Errors"), the message its detail. The one decide
 * wrapper (@loyalty/event-store `decideOn`) maps them to problems, in one place.
 */
export class RuleError<C extends string = string> extends Error {
  constructor(readonly code: C, message: string) {
    super(message);
  }
}
