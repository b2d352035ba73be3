/** Message patterns on the command bus (Kafka topics in distributed mode). One owner service each. */
export const PATTERNS = {
  ledger: {
    enrol: 'ledger.member.enrol',
    get: 'ledger.member.get',
    list: 'ledger.member.list',
    patch: 'ledger.member.patch',
    erase: 'ledger.member.erase',
    resolve: 'ledger.member.resolve',
    adjust: 'ledger.member.adjust',
    entries: 'ledger.member.entries',
    liability: 'ledger.liability',
    /** closing the books (decisions §9a) */
    liabilityAsOf: 'ledger.finance.liability',
    rollForward: 'ledger.finance.roll-forward',
    financeEntries: 'ledger.finance.entries',
    memberState: 'ledger.member.state-change',
    approveEntry: 'ledger.entry.approve',
    rejectEntry: 'ledger.entry.reject',
    processEvent: 'ledger.event.process',
    /** many queued events in one message (ProcessEventsRequest → ProcessEventsReply): decided together, one outcome each */
    processEvents: 'ledger.events.process',
    migrate: 'ledger.migration.import',
    reverseMigration: 'ledger.migration.reverse',
    sweep: 'ledger.sweep',
    wipe: 'ledger.sandbox.wipe',
    /** credit a referral reward (ReferralCreditRequest → ReferralCreditReply), sent by the referral service */
    referral: 'ledger.member.referral',
    /** any accepted id form (M-…, ref:…, phone:…) → { member_id } or 404 */
    resolveId: 'ledger.member.resolve-id',
  },
  ingest: {
    submit: 'ingest.events.submit',
    get: 'ingest.events.get',
    list: 'ingest.events.list',
    wipe: 'ingest.sandbox.wipe',
    /** a member was erased: scrub their identifiers from stored events (EraseCustomerRequest) */
    erase: 'ingest.customer.erase',
  },
  referral: {
    create: 'referral.create',
    get: 'referral.get',
    /** GET /v1/members/{id}/referral */
    details: 'referral.member.details',
    approve: 'referral.approve',
    reject: 'referral.reject',
    /** sandbox wiped: forget cached referral streams */
    wipe: 'referral.sandbox.wipe',
  },
  redemption: {
    create: 'redemption.create',
    confirm: 'redemption.confirm',
    void: 'redemption.void',
    byCode: 'redemption.by-code',
    get: 'redemption.get',
    getReservation: 'redemption.reservation.get',
    quote: 'redemption.quote',
    reserve: 'redemption.reservation.create',
    confirmReservation: 'redemption.reservation.confirm',
    releaseReservation: 'redemption.reservation.release',
    sweep: 'redemption.sweep',
    /** sandbox wiped: forget cached member state (the rows went with the ledger's wipe) */
    wipe: 'redemption.sandbox.wipe',
  },
  webhook: {
    list: 'webhook.endpoint.list',
    get: 'webhook.endpoint.get',
    create: 'webhook.endpoint.create',
    delete: 'webhook.endpoint.delete',
    test: 'webhook.endpoint.test',
    deliveries: 'webhook.endpoint.deliveries',
    /** expiring-soon notices now (after a sandbox test clock moves) */
    sweep: 'webhook.sweep',
  },
} as const;

/** Every request on the bus names its programme partition (tenant key) and the calling key. */
export interface TenantScoped { tenant: string; actor?: string }
