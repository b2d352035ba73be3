import 'reflect-metadata';
import { benchProgram, json, run, target } from './bench-kit';
const main = async () => {
  const t = await target();
  const { key } = await benchProgram(t);
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const ids: string[] = [];
  for (let i = 0; i < 200; i++) {
    const id = (await json(t.url, 'POST', '/v1/members', key, { email: `p${i}@bench.test` })).data.id as string;
    await json(t.url, 'POST', `/v1/members/${id}/adjust`, key, { amount_cents: 1_000_000_000, reason_code: 'bench' });
    ids.push(id);
  }
  let i = 0;
  const which = process.env.WHICH ?? 'voucher';
  const r = await run(which, {
    url: t.url, duration: 8, headers,
    requests: [{ method: 'POST', setupRequest: (req) => (which === 'voucher'
      ? { ...req, path: `/v1/members/${ids[i++ % 200]}/redemptions`, body: JSON.stringify({ amount_cents: 100 }) }
      : { ...req, path: '/v1/redemption-reservations', body: JSON.stringify({ member_id: ids[i++ % 200], amount_cents: 100, cart_ref: 'c', eligible_total_cents: 10000 }) }) }],
  });
  console.log(JSON.stringify(r));
  await t.close();
};
main();
