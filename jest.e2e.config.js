const preset = require('./jest.preset');

module.exports = {
  ...preset,
  displayName: 'e2e',
  testMatch: ['**/*.e2e-spec.ts'],
  // the fault-injection suite runs on its own (npm run test:faults; jest.faults.config.js)
  testPathIgnorePatterns: [...preset.testPathIgnorePatterns, '/faults\\.e2e-spec\\.ts$'],
  testTimeout: 120000,
  maxWorkers: 1,
  globalSetup: '<rootDir>/libs/testing/src/global-setup.js',
  globalTeardown: '<rootDir>/libs/testing/src/global-teardown.js',
};
