// Jest globalSetup for *.int-spec.ts and *.e2e-spec.ts: with Docker, start the servers as containers
// (./containers.js, testcontainers); then fail fast, with a plain message, when PostgreSQL is not
// reachable. Each suite then creates its own database (createTestDatabase in ./test-database.ts).
const { Client } = require('pg');
const { startTestInfrastructure } = require('./containers');

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

module.exports = async function globalSetup() {
  await startTestInfrastructure();
  const url = process.env.TEST_DATABASE_URL || DEFAULT_URL;
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
  } catch (e) {
    const safe = url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
    throw new Error(
      `Integration tests need PostgreSQL, but ${safe} is not reachable: ${e && e.message ? e.message : e}\n` +
        'Start PostgreSQL (127.0.0.1:5432, user postgres) or set TEST_DATABASE_URL to a server where that user may CREATE DATABASE.',
    );
  } finally {
    await client.end().catch(() => undefined);
  }
};
