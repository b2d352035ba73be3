import { TestApp, startTestApp } from './testing/harness';

describe('members over HTTP (standalone)', () => {
  let app: TestApp;
  let key: string;

  beforeAll(async () => {
    app = await startTestApp();
    ({ liveKey: key } = await app.createProgram());
  });
  afterAll(async () => app.close());

  it('enrols a member with 201, then answers 200 for the same email', async () => {
    const first = await app.http('POST', '/v1/members', { key, body: { email: 'Ada@Example.com', phone: '+1 415 555 0100' } });
    expect(first.status).toBe(201);
    expect(first.body.data.id).toMatch(/^M-[0-9A-Z]{26}$/);
    expect(first.body.data.email).toBe('ada@example.com');
    expect(first.body.data.phone).toBe('+14155550100');
    expect(first.body.data.state).toBe('registered');
    const again = await app.http('POST', '/v1/members', { key, body: { email: 'ada@example.com' } });
    expect(again.status).toBe(200);
    expect(again.body.data.id).toBe(first.body.data.id);
  });
});
