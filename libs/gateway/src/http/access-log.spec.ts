import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import { rootLogger } from '@loyalty/runtime';
import { accessLog } from './access-log';
import { GatewayRequest } from './request-context';

describe('accessLog', () => {
  const level = rootLogger().level;
  afterEach(() => { rootLogger().level = level; });

  const exchange = () => {
    const raw = Object.assign(new EventEmitter(), { statusCode: 201 });
    const req = { requestId: 'r1', method: 'POST', raw: { url: '/v1/members/email:a@b.c' } } as unknown as GatewayRequest;
    return { raw, req, reply: { raw } as unknown as FastifyReply };
  };

  it('waits for the response to finish to write its line when the process logs at info', () => {
    rootLogger().level = 'info';
    const { raw, req, reply } = exchange();
    accessLog(req, reply);
    expect(raw.listenerCount('finish')).toBe(1);
  });

  it('does nothing for a line that would be dropped (the process logs above info)', () => {
    rootLogger().level = 'warn';
    const { raw, req, reply } = exchange();
    accessLog(req, reply);
    expect(raw.listenerCount('finish')).toBe(0);
  });
});
