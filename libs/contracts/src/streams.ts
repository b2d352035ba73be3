/**
 * Stream names (architecture.md "Streams") and their parsing, in one place; tenant = programme id,
 * or `<programmeId>_test` for the sandbox.
 */
/** How each kind of stream's name begins (a subscription's `streamPrefixes`). */
export const STREAM_PREFIX = { member: 'member-', order: 'order-', referral: 'referral-' } as const;
/** How the member streams of one tenant begin. */
export const memberStreamPrefix = (tenant: string): string => `${STREAM_PREFIX.member}${tenant}-`;
/** A member id as the API writes it: `M-` and a ULID (Crockford base32, upper case). */
export const isMemberId = (raw: string): boolean => /^M-[0-9A-HJKMNP-TV-Z]{26}$/.test(raw);
export const memberStreamId = (tenant: string, memberId: string): string => `member-${tenant}-${memberId}`;
export const orderStreamId = (tenant: string, orderRef: string): string => `order-${tenant}-${orderRef}`;
/** One referral per friend, ever. */
export const referralStreamId = (tenant: string, friendId: string): string => `referral-${tenant}-${friendId}`;

const MEMBER_STREAM = /^member-(.+)-(M-[0-9A-Z]{26})$/;
const ORDER_STREAM = /^order-(P-[0-9A-Z]{26}(?:_test)?)-([\s\S]+)$/;
const REFERRAL_STREAM = /^referral-(.+)-(M-[0-9A-Z]{26})$/;

/** `member-<tenant>-<M-…>` → its parts; null for any other stream. */
export const parseMemberStreamId = (streamId: string): { tenant: string; memberId: string } | null => {
  const m = MEMBER_STREAM.exec(streamId);
  return m ? { tenant: m[1], memberId: m[2] } : null;
};

/** `order-<tenant>-<order ref>` → its parts; null for any other stream. */
export const parseOrderStreamId = (streamId: string): { tenant: string; orderRef: string } | null => {
  const m = ORDER_STREAM.exec(streamId);
  return m ? { tenant: m[1], orderRef: m[2] } : null;
};

/** `referral-<tenant>-<friend M-…>` → its parts; null for any other stream. */
export const parseReferralStreamId = (streamId: string): { tenant: string; friendId: string } | null => {
  const m = REFERRAL_STREAM.exec(streamId);
  return m ? { tenant: m[1], friendId: m[2] } : null;
};

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A POSIX regular expression matching every stream of one tenant: `<kind>-<tenant>-…` or
 * `<kind>-<tenant>` (member-, order-, referral-, webhook-endpoint-…). The kind is lower case and
 * the tenant starts with `P-`, so a live programme's streams never match its sandbox's pattern.
 */
export const tenantStreamPattern = (tenant: string): string => `^[a-z][a-z0-9_]*(-[a-z][a-z0-9_]*)*-${escapeRegex(tenant)}(-|$)`;
