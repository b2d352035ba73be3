import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Command, CommanderError } from 'commander';
import * as build from './admin-request.builder';
import { AdminRequest, MEMBER_COMMANDS, REVIEW_DECISIONS, UsageError } from './admin-request.builder';
import { AdminApiError, AdminUnreachableError, resultOf, send } from './admin.client';
import { parseMigrationFile } from './migration-file.parser';

export const DEFAULT_URL = 'http://127.0.0.1:3000';

/** Exit codes: 0 done, 1 the service refused (problem printed), 2 bad usage, 3 service unreachable. */
export const EXIT = { ok: 0, api: 1, usage: 2, unreachable: 3 } as const;

/** Everything the CLI touches outside itself, so tests can run it in-process. */
export interface CliDeps {
  fetch?: typeof fetch;
  env?: Record<string, string | undefined>;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  readFile?: (path: string) => Promise<string>;
  cwd?: string;
}

interface GlobalOptions { url?: string; token?: string; compact?: boolean }

/**
 * Runs one admin command, e.g. `run(['programs', 'get', 'P-…'])`, and resolves to its exit code.
 * Prints the response's `data` as JSON on stdout; errors go to stderr.
 */
export const run = async (argv: readonly string[], deps: CliDeps = {}): Promise<number> => {
  const env = deps.env ?? process.env;
  const out = deps.stdout ?? ((t: string) => void process.stdout.write(t));
  const err = deps.stderr ?? ((t: string) => void process.stderr.write(t));
  const cwd = deps.cwd ?? process.cwd();
  const read = deps.readFile ?? ((p: string) => readFile(p, 'utf8'));

  const readText = async (file: string): Promise<string> => {
    try {
      return await read(resolve(cwd, file));
    } catch (e) {
      throw new UsageError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  };
  const readJson = async (file: string): Promise<unknown> => {
    const text = await readText(file);
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new UsageError(`${file}: not valid JSON (${(e as Error).message})`);
    }
  };

  /** Sends the request with the global options and prints the result. */
  const execute = async (cmd: Command, request: () => AdminRequest | Promise<AdminRequest>, format?: (data: unknown) => string): Promise<void> => {
    const g = cmd.optsWithGlobals<GlobalOptions>();
    const url = g.url ?? env.LOYALTY_URL ?? DEFAULT_URL;
    const token = g.token ?? env.LOYALTY_ADMIN_TOKEN;
    if (!token) throw new UsageError('no admin token: pass --token or set LOYALTY_ADMIN_TOKEN');
    if (!/^https?:\/\//i.test(url)) throw new UsageError(`--url must be an http(s) URL, got "${url}"`);
    const req = await request();
    const res = await send({ url, token, fetch: deps.fetch ?? globalThis.fetch }, req);
    out(format ? format(resultOf(res)) : `${JSON.stringify(resultOf(res), null, g.compact ? undefined : 2)}\n`);
  };

  const program = new Command('loyalty-admin')
    .description('Admin plane of the loyalty service (/admin/v1). Prints JSON; exit code 1 when the service refuses.')
    .option('--url <url>', `service base URL (env LOYALTY_URL, default ${DEFAULT_URL})`)
    .option('--token <token>', 'admin token (env LOYALTY_ADMIN_TOKEN)')
    .option('--compact', 'print JSON on one line')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err })
    .showSuggestionAfterError(true);

  // programmes ---------------------------------------------------------------------------------
  const programs = program.command('programs').description('create, read and change programmes');
  programs.command('create')
    .description('create a programme with its live and test keys (keys are shown once)')
    .requiredOption('--name <name>', 'programme name (program_name)')
    .requiredOption('--currency <name>', 'what members see the points called (currency_name)')
    .option('--rules <file>', 'JSON file: array of rules or {"rules": [...]}')
    .option('--tiers <file>', 'JSON file: array of tiers or {"tiers": [...]}')
    .option('--settings <file>', 'JSON file: settings object')
    .action(async (o: { name: string; currency: string; rules?: string; tiers?: string; settings?: string }, cmd: Command) =>
      execute(cmd, async () => build.createProgram({
        name: o.name,
        currency: o.currency,
        rules: o.rules === undefined ? undefined : build.rulesFrom(await readJson(o.rules), o.rules),
        tiers: o.tiers === undefined ? undefined : build.tiersFrom(await readJson(o.tiers), o.tiers),
        settings: o.settings === undefined ? undefined : build.settingsFrom(await readJson(o.settings), o.settings),
      })));
  programs.command('get')
    .description('show a programme with its rules, tiers, settings and keys')
    .argument('<pid>', 'programme id (P-…)')
    .action(async (pid: string, _o: unknown, cmd: Command) => execute(cmd, () => build.getProgram(pid)));
  programs.command('patch')
    .description('change a programme\'s name, currency name or settings')
    .argument('<pid>', 'programme id (P-…)')
    .option('--name <name>', 'new programme name')
    .option('--currency <name>', 'new currency name')
    .option('--settings <file>', 'JSON file: settings to merge')
    .action(async (pid: string, o: { name?: string; currency?: string; settings?: string }, cmd: Command) =>
      execute(cmd, async () => build.patchProgram(pid, {
        name: o.name,
        currency: o.currency,
        settings: o.settings === undefined ? undefined : build.settingsFrom(await readJson(o.settings), o.settings),
      })));

  program.command('rules')
    .description('earning rules')
    .command('put')
    .description('replace a programme\'s rules (each changed rule\'s version is bumped)')
    .argument('<pid>', 'programme id (P-…)')
    .argument('<file>', 'JSON file: array of rules or {"rules": [...]}')
    .action(async (pid: string, file: string, _o: unknown, cmd: Command) =>
      execute(cmd, async () => build.putRules(pid, build.rulesFrom(await readJson(file), file))));

  program.command('tiers')
    .description('tiers')
    .command('put')
    .description('replace a programme\'s tiers')
    .argument('<pid>', 'programme id (P-…)')
    .argument('<file>', 'JSON file: array of tiers or {"tiers": [...]}')
    .action(async (pid: string, file: string, _o: unknown, cmd: Command) =>
      execute(cmd, async () => build.putTiers(pid, build.tiersFrom(await readJson(file), file))));

  // API keys -----------------------------------------------------------------------------------
  const keys = program.command('keys').description('API keys');
  keys.command('create')
    .description('issue a key (shown once)')
    .argument('<pid>', 'programme id (P-…)')
    .requiredOption('--mode <mode>', 'live or test')
    .option('--scopes <list>', 'comma-separated: ingest,read,act,webhooks (default: all four)')
    .option('--name <name>', 'a label for the key')
    .option('--burst <n>', 'rate limit: bucket size (with --per-second)')
    .option('--per-second <n>', 'rate limit: refill per second (with --burst)')
    .action(async (pid: string, o: { mode: string; scopes?: string; name?: string; burst?: string; perSecond?: string }, cmd: Command) =>
      execute(cmd, () => build.createKey(pid, o)));
  keys.command('list')
    .description('list a programme\'s keys (never the secrets)')
    .argument('<pid>', 'programme id (P-…)')
    .action(async (pid: string, _o: unknown, cmd: Command) => execute(cmd, () => build.listKeys(pid)));
  keys.command('rotate')
    .description('issue a replacement key; the old one keeps working for the grace period (24 h)')
    .argument('<kid>', 'key id')
    .action(async (kid: string, _o: unknown, cmd: Command) => execute(cmd, () => build.rotateKey(kid)));
  keys.command('revoke')
    .description('revoke a key at once')
    .argument('<kid>', 'key id')
    .action(async (kid: string, _o: unknown, cmd: Command) => execute(cmd, () => build.revokeKey(kid)));

  // members, review queues ---------------------------------------------------------------------
  const members = program.command('members').description('member state changes');
  for (const command of MEMBER_COMMANDS) {
    members.command(command)
      .description(`${command} a member`)
      .argument('<id>', 'member id (M-…)')
      .option('--mode <mode>', 'live or test (where the id alone is ambiguous)')
      .action(async (id: string, o: { mode?: string }, cmd: Command) => execute(cmd, () => build.memberState(id, command, o.mode)));
  }
  const entries = program.command('entries').description('ledger entries under review (manual timing)');
  const referrals = program.command('referrals').description('referrals held by the fraud checks');
  for (const decision of REVIEW_DECISIONS) {
    entries.command(decision)
      .description(`${decision} an earn entry that is under review`)
      .argument('<id>', 'ledger entry id (LE-…)')
      .action(async (id: string, _o: unknown, cmd: Command) => execute(cmd, () => build.reviewEntry(id, decision)));
    referrals.command(decision)
      .description(`${decision} a held referral`)
      .argument('<id>', 'referral id (RF-…)')
      .action(async (id: string, _o: unknown, cmd: Command) => execute(cmd, () => build.reviewReferral(id, decision)));
  }

  // sandbox, clock, logs -----------------------------------------------------------------------
  program.command('clock')
    .description('sandbox test clocks')
    .command('advance')
    .description('move a programme\'s sandbox clock forward; time-based behaviour follows at once')
    .argument('<pid>', 'programme id (P-…)')
    .argument('<duration>', 'seconds, or a number with s, m, h, d or w (e.g. 30d)')
    .action(async (pid: string, duration: string, _o: unknown, cmd: Command) => execute(cmd, () => build.advanceClock(pid, duration)));

  program.command('sandbox')
    .description('the programme\'s test-mode data')
    .command('wipe')
    .description('delete every sandbox member, ledger, event and webhook of a programme')
    .argument('<pid>', 'programme id (P-…)')
    .action(async (pid: string, _o: unknown, cmd: Command) => execute(cmd, () => build.wipeSandbox(pid)));

  program.command('rejected-calls')
    .description('calls the service refused for a programme in the last 14 days')
    .argument('<pid>', 'programme id (P-…)')
    .option('--limit <n>', 'at most this many (default 100, at most 500)')
    .action(async (pid: string, o: { limit?: string }, cmd: Command) => execute(cmd, () => build.rejectedCalls(pid, o.limit)));

  // migrations ---------------------------------------------------------------------------------
  const migrations = program.command('migrations').description('balance imports from a previous system');
  migrations.command('import')
    .description('import balances: one migration adjust entry per member')
    .argument('<pid>', 'programme id (P-…)')
    .argument('<file>', 'JSON (array or {"entries": [...]}) or CSV with header email,phone,external_ref,amount_cents,expires_at')
    .requiredOption('--mode <mode>', 'live or test')
    .action(async (pid: string, file: string, o: { mode: string }, cmd: Command) =>
      execute(cmd, async () => build.importMigration(pid, o.mode, parseMigrationFile(await readText(file), file))));
  migrations.command('reverse')
    .description('reverse a whole import batch')
    .argument('<batch>', 'batch id from the import')
    .action(async (batch: string, _o: unknown, cmd: Command) => execute(cmd, () => build.reverseMigration(batch)));

  // finance ------------------------------------------------------------------------------------
  program.command('finance')
    .description('closing the books (decisions §9a)')
    .command('roll-forward')
    .description('opening and closing liability, the period\'s movements by kind and breakage, for (from, to] in programme time')
    .argument('<pid>', 'programme id (P-…)')
    .requiredOption('--from <instant>', 'start of the period, exclusive (RFC 3339, e.g. 2026-10-31T23:59:59Z)')
    .requiredOption('--to <instant>', 'end of the period, inclusive, at most the programme time now')
    .option('--mode <mode>', 'live or test (default live)')
    .option('--csv', 'print a line,value CSV whose movement lines are signed so they foot to the closing figure')
    .action(async (pid: string, o: { from: string; to: string; mode?: string; csv?: boolean }, cmd: Command) =>
      execute(cmd, () => build.rollForward(pid, o), o.csv ? build.rollForwardCsv : undefined));

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander has already printed the usage problem (or the help that was asked for)
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (e instanceof AdminApiError) {
      err(`error: ${e.message}\n`);
      return EXIT.api;
    }
    if (e instanceof UsageError) {
      err(`error: ${e.message}\n`);
      return EXIT.usage;
    }
    if (e instanceof AdminUnreachableError) {
      err(`error: ${e.message}\n`);
      return EXIT.unreachable;
    }
    throw e;
  }
};
