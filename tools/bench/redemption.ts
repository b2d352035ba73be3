import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { benchProgram, json, printTable, run, target } from './bench-kit';

/**
 * p50/p99 of the spending endpoints under 50 concurrent clients: quote, reserve, confirm of a
 * reservation, and voucher creation. Requests are spread over MEMBERS members (one member's
 * commands are serialised by its stream, so a single member would measure contention instead).
 */
const main = async () => {
  const t = await target();
  const duration = Number(process.env.BENCH_SECONDS ?? 10);
  const members = Number(process.env.BENCH_MEMBERS ?? 200);
  try {
    const { key } = await benchProgram(t);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const tag = randomUUID().slice(0, 8);
    const ids: string[] = [];
    for (let i = 0; i < members; i++) {
      const id = (await json(t.url, 'POST', '/v1/members', key, { email: `r${tag}-${i}@bench.test` })).data.id as string;
      await json(t.url, 'POST', `/v1/members/${id}/adjust`, key, { amount_cents: 1_000_000_000, reason_code: 'bench' });
      ids.push(id);
    }
    const member = (() => { let i = 0; return () => ids[i++ % ids.length]; })();

    const quote = await run('POST /v1/redemption-quotes', {
      url: t.url, duration, headers,
      requests: [{ method: 'POST', path: '/v1/redemption-quotes', setupRequest: (req) => ({ ...req, body: JSON.stringify({ member_id: member(), eligible_total_cents: 10_000, payment_method: 'card' }) }) }],
    });

    const reservations: string[] = [];
    let cart = 0;
    const reserve = await run('POST /v1/redemption-reservations', {
      url: t.url, duration, headers,
      requests: [{
        method: 'POST', path: '/v1/redemption-reservations',
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ member_id: member(), amount_cents: 100, cart_ref: `cart-${cart++}`, eligible_total_cents: 10_000, payment_method: 'card' }) }),
        onResponse: (status, body) => { if (status === 201) reservations.push(JSON.parse(body).data.id); },
      }],
    });

    // each reservation opened above is confirmed exactly once (amount = their number; no repeats)
    let c = 0;
    const confirm = await run('POST /v1/redemption-reservations/{id}/confirm', {
      url: t.url, amount: reservations.length, headers,
      requests: [{
        method: 'POST',
        setupRequest: (req) => {
          const i = c++ % reservations.length;
          return { ...req, path: `/v1/redemption-reservations/${reservations[i]}/confirm`, body: JSON.stringify({ order_ref: `order-${i}` }) };
        },
      }],
    });

    const voucher = await run('POST /v1/members/{id}/redemptions (voucher)', {
      url: t.url, duration, headers,
      requests: [{ method: 'POST', setupRequest: (req) => ({ ...req, path: `/v1/members/${member()}/redemptions`, body: JSON.stringify({ amount_cents: 100 }) }) }],
    });

    printTable(`redemption benchmark (${t.mode}, 50 connections, ${duration}s each, ${members} members; ${reservations.length} reservations opened and confirmed once each)`, [quote, reserve, confirm, voucher]);
  } finally {
    await t.close();
  }
};

main().catch((e) => { console.error(e); process.exit(1); });
