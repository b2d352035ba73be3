import 'reflect-metadata';
import { listProjections, rebuildProjections } from './rebuild';

/**
 * `npm run rebuild -- [--list] [projection …]`: drops and rebuilds the named read models (all by
 * default) from the event store at DATABASE_URL.
 */
const main = async (): Promise<void> => {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write('usage: npm run rebuild -- [--list] [projection ...]\n  DATABASE_URL selects the database (default: the local loyalty database)\n');
    return;
  }
  if (args.includes('--list')) {
    for (const name of await listProjections()) process.stdout.write(`${name}\n`);
    return;
  }
  const names = args.filter((a) => !a.startsWith('-'));
  const results = await rebuildProjections({ names, log: (line) => process.stdout.write(`${line}\n`) });
  process.stdout.write(`rebuilt ${results.length} projection(s)\n`);
};

main().catch((e: unknown) => {
  process.stderr.write(`rebuild failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
