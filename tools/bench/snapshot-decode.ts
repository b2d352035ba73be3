/**
 * Long histories (issue 13): what decoding a member's snapshot costs, without the service.
 *
 *   npm run build && node -r ./tools/register-paths.js dist/tools/bench/snapshot-decode.js [entries]
 *
 * Builds the long-history benchmark's member (tools/bench/long-history-seed.ts, 100,000 entries by
 * default) in memory, prints its snapshot's size by part, then times the decode (V8 deserialize +
 * `decodeMemberSnapshot`) in fresh processes (the first decode after a restart runs cold code) and
 * warm (median of 9 in one process). Figures for notes, never asserted.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { MemberEvent, memberEvolver } from '@loyalty/domain-member';
import { seedHistory } from './long-history-seed';
import { median } from './service-process';

const decodeOnce = (bytes: Buffer): { total: number; deserialize: number } => {
  const t0 = process.hrtime.bigint();
  const stored = deserialize(bytes);
  const t1 = process.hrtime.bigint();
  const state = memberEvolver.snapshot.decode(stored);
  const t2 = process.hrtime.bigint();
  if (!memberEvolver.snapshot.accepts(state)) throw new Error('the decoded state was refused');
  return { total: Number(t2 - t0) / 1e6, deserialize: Number(t1 - t0) / 1e6 };
};

const main = async () => {
  if (process.argv[2] === 'decode') {
    const bytes = readFileSync(process.argv[3]);
    const first = decodeOnce(bytes);
    process.stdout.write(JSON.stringify(first));
    return;
  }
  const entries = Number(process.argv[2] ?? 100_000);
  const at = '2016-01-01T00:00:00.000Z';
  const created: MemberEvent = {
    type: 'MemberCreated',
    data: { member_id: 'M-BENCH', state: 'registered', referral_code: 'ABCDEFGH', pii: { v: 1, kid: 'M-BENCH', iv: '', tag: '', data: '' }, marketing_consent: false, accepted_terms_version: null, at },
  };
  let s = memberEvolver.evolve(memberEvolver.initialState(), created);
  s = await seedHistory(s, Date.parse(at) + 60_000, entries, () => undefined);
  const stored = memberEvolver.snapshot.encode(s) as { state: Record<string, unknown> };
  const bytes = serialize(stored);
  const parts = Object.entries(stored.state).map(([k, v]) => [k, serialize(v).length] as const).sort((a, b) => b[1] - a[1]);
  process.stdout.write(`${entries} entries: ${s.entries.size} entries kept, ${s.lots.length} lots, ${s.activity.length} activity items, ${s.causes.size} causes; snapshot ${bytes.length} bytes\n`);
  process.stdout.write(`  by part: ${parts.slice(0, 8).map(([k, n]) => `${k} ${n}`).join(', ')}\n`);
  const dir = mkdtempSync(join(tmpdir(), 'snapshot-decode-'));
  const file = join(dir, 'snapshot.bin');
  writeFileSync(file, bytes);
  const cold = Array.from({ length: 5 }, () => JSON.parse(execFileSync(process.execPath, ['-r', './tools/register-paths.js', __filename, 'decode', file], { encoding: 'utf8' })) as { total: number; deserialize: number });
  const warm = Array.from({ length: 9 }, () => decodeOnce(bytes));
  const f = (xs: number[]) => median(xs).toFixed(1);
  process.stdout.write(`  decode in a fresh process (median of 5): ${f(cold.map((c) => c.total))} ms (deserialize ${f(cold.map((c) => c.deserialize))} ms)\n`);
  process.stdout.write(`  decode warm (median of 9): ${f(warm.map((c) => c.total))} ms (deserialize ${f(warm.map((c) => c.deserialize))} ms)\n`);
};

void main();
