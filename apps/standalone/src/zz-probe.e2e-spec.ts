import { startTestApp } from './testing/harness';
it('probe', async () => {
  const app = await startTestApp();
  const p = await app.createProgram();
  for (const raw of ['[]', '"x"', 'null', '1', 'true', '[{"email":"a@b.c"}]', '{"email":"a@b.c","__proto__":{"x":1}}', '{"email":"a@b.c","constructor":{"prototype":{"x":1}}}', '']) {
    const r = await app.http('POST', '/v1/members', { key: p.liveKey, rawBody: raw });
    console.log(JSON.stringify(raw), r.status, JSON.stringify(r.body).slice(0, 200));
  }
  for (const path of ['/v1/members/%E0%A4%A', '/v1/members/ref:%00', '/v1/members/phone:%2B', '/v1/members?limit=1&limit=2', '/v1/members?state[]=x', '/v1/members?email[a]=b', '/v1/members/M-00000000000000000000000000/ledger?cursor=WyJhIl0']) {
    const r = await app.http('GET', path, { key: p.liveKey });
    console.log(path, r.status, JSON.stringify(r.body).slice(0, 200));
  }
  const r = await app.http('POST', '/v1/members', { key: p.liveKey, body: { email: 'a@b.co' }, headers: { 'content-type': 'text/plain' } });
  console.log('text/plain', r.status);
  await app.close();
});
