// ESLint flat config. Its job is architecture, not style: Nx module boundaries (tags in each
// project.json), a pure domain, and no focused or skipped tests. No type-aware rules, so
// `npm run lint` stays fast. Only TypeScript under apps/, libs/ and tools/ is linted.
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

const TEST_FILES = ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', '**/*.contract.ts'];
const SOURCES = ['apps/**/*.ts', 'libs/**/*.ts', 'tools/**/*.ts'];

/** Who may import whom, by project tag (architecture.md, "Nx module boundaries"). */
const depConstraints = [
  // the gateway reaches services only over the bus; redemption asks the ledger over the bus too.
  // Listed first so that the error names the exact rule (the type:service rule below covers them).
  { sourceTag: 'scope:gateway', notDependOnLibsWithTags: ['scope:ledger', 'scope:ingest', 'scope:redemption', 'scope:referral', 'scope:webhook'] },
  { sourceTag: 'scope:redemption', notDependOnLibsWithTags: ['scope:ledger'] },
  // pure decide/evolve: nothing but other domain libs and the shared contracts
  { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:domain', 'type:contracts'] },
  { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:contracts'] },
  // config, ids, errors, event store, bus, programme store, test helpers: never a service
  { sourceTag: 'type:platform', onlyDependOnLibsWithTags: ['type:platform', 'type:contracts', 'type:domain'] },
  // a service talks to another only through contracts on the bus or the event store's events
  { sourceTag: 'type:service', onlyDependOnLibsWithTags: ['type:domain', 'type:contracts', 'type:platform'] },
  // the admin CLI speaks HTTP only
  { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:contracts'] },
  // composition roots wire anything together
  { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['*'] },
];

/** Domain purity (style.md §1): time and ids arrive in command metadata; no framework, no I/O. */
const DOMAIN_BANNED_IMPORTS = {
  paths: [
    { name: 'typeorm', message: 'Domain libs are pure: no persistence. Put it in the service lib.' },
    { name: 'kafkajs', message: 'Domain libs are pure: no messaging. Put it in the service lib.' },
    { name: 'pg', message: 'Domain libs are pure: no database. Put it in the service lib.' },
    { name: 'crypto', message: 'Domain libs are pure: ids and randomness arrive in command metadata.' },
    { name: 'fs', message: 'Domain libs are pure: no I/O.' },
    { name: 'path', message: 'Domain libs are pure: no I/O.' },
    { name: 'uuid', message: 'Domain libs are pure: ids arrive in command metadata.' },
    { name: 'ulid', message: 'Domain libs are pure: ids arrive in command metadata.' },
  ],
  patterns: [
    { group: ['@nestjs/*'], message: 'Domain libs are pure: no Nest. Put adapters in the service lib.' },
    { group: ['typeorm/*', 'pg/*', 'kafkajs/*', 'fs/*'], message: 'Domain libs are pure: no I/O.' },
    { group: ['node:*'], message: 'Domain libs are pure: no Node built-ins (time, ids and I/O come from outside).' },
  ],
};

const DOMAIN_BANNED_SYNTAX = [
  {
    selector: "NewExpression[callee.type='Identifier'][callee.name='Date'][arguments.length=0]",
    message: 'Domain libs are pure: take the time from the command metadata instead of new Date().',
  },
  {
    selector: "CallExpression[callee.type='MemberExpression'][callee.object.name='Date'][callee.property.name='now']",
    message: 'Domain libs are pure: take the time from the command metadata instead of Date.now().',
  },
  {
    selector: "CallExpression[callee.type='MemberExpression'][callee.object.name='Math'][callee.property.name='random']",
    message: 'Domain libs are pure: randomness and ids arrive in command metadata, not Math.random().',
  },
];

// Nx's "static import of a lazy-loaded library" check is about browser bundle splitting. In these
// Node processes `await import()` only defers loading an optional adapter (e.g. EventStoreDB), so
// it is switched off for the workspace's own libs; tag constraints still apply to dynamic imports.
const boundaries = (allowCircularSelfDependency) => ['error', {
  enforceBuildableLibDependency: false,
  allowCircularSelfDependency,
  checkDynamicDependenciesExceptions: ['@loyalty/*'],
  allow: [],
  depConstraints,
}];

export default [
  {
    ignores: [
      '**/node_modules/**', 'dist/**', '.kafka/**', '.nx/**', 'coverage/**', 'docker/**', 'deploy/**', 'docs/**',
      // only TypeScript sources are linted
      '**/*.js', '**/*.cjs', '**/*.mjs',
    ],
  },
  {
    files: SOURCES,
    languageOptions: {
      parser: tseslint.parser,
      ecmaVersion: 2022,
      sourceType: 'module',
    },
    plugins: { '@nx': nx, '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'warn' },
    rules: {
      '@nx/enforce-module-boundaries': boundaries(false),
      'no-debugger': 'error',
    },
  },
  {
    // a test may import its own lib's public API through the alias (index.spec.ts does)
    files: TEST_FILES,
    rules: {
      '@nx/enforce-module-boundaries': boundaries(true),
      // every test runs: no focused or skipped tests
      'no-restricted-properties': ['error',
        ...['describe', 'it', 'test'].flatMap((object) => ['only', 'skip', 'todo'].map((property) => ({
          object, property, message: `${object}.${property} is not allowed: every test runs and asserts.`,
        }))),
      ],
      'no-restricted-globals': ['error',
        ...['fdescribe', 'fit', 'xdescribe', 'xit', 'xtest'].map((name) => ({
          name, message: `${name} is not allowed: every test runs and asserts.`,
        })),
      ],
    },
  },
  {
    files: ['libs/domain/**/*.ts'],
    // the domain's own tests may read files (index.spec.ts checks purity by scanning the sources)
    ignores: TEST_FILES,
    rules: {
      'no-restricted-imports': ['error', DOMAIN_BANNED_IMPORTS],
      'no-restricted-syntax': ['error', ...DOMAIN_BANNED_SYNTAX],
    },
  },
];
