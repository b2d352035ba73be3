const preset = require('./jest.preset');

module.exports = {
  ...preset,
  displayName: 'e2e',
  // includes the fault-injection suite (faults.e2e-spec.ts, 2–4 min); `npm run test:faults` runs it alone
  testMatch: ['**/*.e2e-spec.ts'],
  testTimeout: 120000,
  maxWorkers: 1,
  globalSetup: '<rootDir>/libs/testing/src/global-setup.js',
  globalTeardown: '<rootDir>/libs/testing/src/global-teardown.js',
};
