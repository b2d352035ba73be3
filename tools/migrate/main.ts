import 'reflect-metadata';
import { ensureDatabase, loadConfig, migrate, migrationStatus, revertLastMigration } from '@loyalty/platform';
import { ALL_MIGRATIONS } from './all-migrations';

const USAGE = `usage: npm run migrate -- [up | down | status]
  up      apply every pending schema migration (default; what the migration Job runs)
  down    revert the last applied migration
  status  list the migrations and whether each is applied
  DATABASE_URL selects the database (default: the local loyalty database)
`;

/** `npm run migrate`: the schema migrations of every service (TypeORM), for the migration Job and operators. */
const main = async (): Promise<number> => {
  const [command = 'up', ...rest] = process.argv.slice(2);
  if (command === '--help' || command === '-h') { process.stdout.write(USAGE); return 0; }
  if (rest.length || !['up', 'down', 'status'].includes(command)) { process.stderr.write(USAGE); return 2; }
  const { databaseUrl } = loadConfig();
  const out = (line: string) => process.stdout.write(`${line}\n`);
  if (command === 'up') {
    await ensureDatabase(databaseUrl);
    const { applied, adopted } = await migrate(databaseUrl, ALL_MIGRATIONS);
    if (adopted.length) out(`adopted ${adopted.length} migration(s) applied by the previous runner: ${adopted.join(', ')}`);
    for (const name of applied) out(`applied ${name}`);
    out(applied.length ? `${applied.length} migration(s) applied` : 'schema up to date');
  } else if (command === 'down') {
    const reverted = await revertLastMigration(databaseUrl, ALL_MIGRATIONS);
    out(reverted ? `reverted ${reverted}` : 'nothing to revert');
  } else {
    for (const m of await migrationStatus(databaseUrl, ALL_MIGRATIONS)) out(`${m.applied ? 'applied' : 'pending'}  ${m.name}${m.legacyId ? `  (${m.legacyId})` : ''}`);
  }
  return 0;
};

main().then((code) => process.exit(code), (e: unknown) => {
  process.stderr.write(`migrate failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
