module.exports = {
  ...require('./jest.preset'),
  displayName: 'integration',
  testMatch: ['**/*.int-spec.ts'],
  testTimeout: 60000,
  globalSetup: '<rootDir>/libs/testing/src/global-setup.js',
  globalTeardown: '<rootDir>/libs/testing/src/global-teardown.js',
};
