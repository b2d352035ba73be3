// The fault-injection suite (issue 8) alone: the distributed topology on its own PostgreSQL and
// Kafka, with a PostgreSQL restart and a broker kill under order traffic (2–4 min). It is also part
// of the e2e tier of `npm test`; this config runs just it (`npm run test:faults`, FAULT_TRACE=<file>).
const e2e = require('./jest.e2e.config');

module.exports = { ...e2e, displayName: 'faults', testMatch: ['**/faults.e2e-spec.ts'] };
