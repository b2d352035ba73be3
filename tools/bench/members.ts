import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { benchProgram, json, printTable, run, target } from './bench-kit';

/** p50/p99 of POST /v1/members and GET /v1/members/{id} under 50 concurrent clients. */
const main = async () => {
  const t = await target();
  const duration = Number(process.env.BENCH_SECONDS ?? 10);
  try {
    const { key } = await benchProgram(t);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const run1 = randomUUID().slice(0, 8);
    let n = 0;
    const enrol = await run('POST /v1/members (new email each)', {
      url: t.url, duration, headers,
      requests: [{ method: 'POST', path: '/v1/members', setupRequest: (req) => ({ ...req, body: JSON.stringify({ email: `b${run1}-${n++}@bench.test` }) }) }],
    });
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) ids.push((await json(t.url, 'POST', '/v1/members', key, { email: `g${run1}-${i}@bench.test` })).data.id);
    let g = 0;
    const get = await run('GET /v1/members/{id}', {
      url: t.url, duration, headers,
      requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/v1/members/${ids[g++ % ids.length]}` }) }],
    });
    printTable(`members benchmark (${t.mode}, 50 connections, ${duration}s each)`, [enrol, get]);
  } finally {
    await t.close();
  }
};

main().catch((e) => { console.error(e); process.exit(1); });
