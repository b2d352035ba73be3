// Shared Jest settings: SWC transpiles TypeScript (with decorator metadata) without type-checking;
// `npm run typecheck` is the type gate.
const { pathsToModuleNameMapper } = require('./tools/jest-paths');
module.exports = {
  rootDir: __dirname,
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['@swc/jest', {
      jsc: { parser: { syntax: 'typescript', decorators: true }, transform: { legacyDecorator: true, decoratorMetadata: true }, target: 'es2022' },
      module: { type: 'commonjs' },
    }],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper: pathsToModuleNameMapper(),
  testPathIgnorePatterns: ['/node_modules/', '/dist/', '/.kafka/'],
};
