/** Stream names (architecture.md "Streams"); tenant = programme id, or `<programmeId>_test` for the sandbox. */
export const memberStreamId = (tenant: string, memberId: string): string => `member-${tenant}-${memberId}`;
export const orderStreamId = (tenant: string, orderRef: string): string => `order-${tenant}-${orderRef}`;
