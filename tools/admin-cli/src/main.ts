// `npm run admin -- <command>`: a thin wrapper; everything lives in run() so tests can call it in-process.
import { run } from './admin-cli.program';

run(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (e: unknown) => {
    process.stderr.write(`error: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exitCode = 1;
  },
);
