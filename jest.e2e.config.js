module.exports = {
  ...require('./jest.preset'),
  displayName: 'e2e',
  testMatch: ['**/*.e2e-spec.ts'],
  testTimeout: 120000,
  maxWorkers: 1,
  globalSetup: '<rootDir>/libs/testing/src/global-setup.js',
};
