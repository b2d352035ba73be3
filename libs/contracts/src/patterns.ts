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
    /** sandbox wiped: forget cached referral streams and delete this service's rows of the sandbox */
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
    /** sandbox wiped: forget cached member state and delete this service's rows of the sandbox */
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
    /** sandbox wiped: delete this service's rows of the sandbox */
    wipe: 'webhook.sandbox.wipe',
  },
} as const;

/**
 * The kind of request topic a pattern goes on in distributed mode (`<owner>.<kind>`): a partition
 * is consumed one request at a time, so requests that may take long stay off the partitions of the
 * synchronous commands. `events`: batches of queued events for the ledger (tens of milliseconds
 * each, a steady stream during a flash sale); `reads`: a programme's lists and finance reports
 * (keyed by programme, larger replies); `bulk`: imports, sweeps and sandbox wipes (seconds);
 * `commands`: everything else (one member's command or read, answered in milliseconds).
 */
export const requestTopicKind = (pattern: string): 'commands' | 'events' | 'reads' | 'bulk' =>
  EVENT_PATTERNS.has(pattern) ? 'events' : READ_PATTERNS.has(pattern) ? 'reads' : BULK_PATTERNS.has(pattern) ? 'bulk' : 'commands';

const EVENT_PATTERNS: ReadonlySet<string> = new Set([PATTERNS.ledger.processEvent, PATTERNS.ledger.processEvents]);
const READ_PATTERNS: ReadonlySet<string> = new Set([
  PATTERNS.ledger.list, PATTERNS.ledger.liability, PATTERNS.ledger.liabilityAsOf, PATTERNS.ledger.rollForward, PATTERNS.ledger.financeEntries,
  PATTERNS.ingest.list,
]);
const BULK_PATTERNS: ReadonlySet<string> = new Set([
  PATTERNS.ledger.migrate, PATTERNS.ledger.reverseMigration, PATTERNS.ledger.sweep, PATTERNS.ledger.wipe,
  PATTERNS.ingest.wipe, PATTERNS.ingest.erase, PATTERNS.referral.wipe,
  PATTERNS.redemption.sweep, PATTERNS.redemption.wipe, PATTERNS.webhook.sweep, PATTERNS.webhook.wipe,
]);

/** Every request on the bus names its programme partition (tenant key) and the calling key. */
export interface TenantScoped { tenant: string; actor?: string }
