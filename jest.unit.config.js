module.exports = { ...require('./jest.preset'), displayName: 'unit', testMatch: ['**/*.spec.ts'] };
