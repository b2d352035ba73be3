import { withRequestId } from '@loyalty/platform';
import { RedactingLogger } from './redacting-logger';

const capture = (fn: () => void): string[] => {
  const written: string[] = [];
  const out = jest.spyOn(process.stdout, 'write').mockImplementation(((c: unknown) => { written.push(String(c)); return true; }) as never);
  const err = jest.spyOn(process.stderr, 'write').mockImplementation(((c: unknown) => { written.push(String(c)); return true; }) as never);
  try {
    fn();
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return written;
};

describe('RedactingLogger', () => {
  it('writes no value quoted by a database error, no email and no phone, in messages or stacks', () => {
    const written = capture(() => {
      const logger = new RedactingLogger();
      const e = new Error('invalid input syntax for type bigint: "ada@example.com"');
      logger.error(`unhandled error: ${e.message}`, e.stack, 'ProblemFilter');
      logger.error(e);
      logger.warn('customer unmatched: phone +14155550100 is not valid');
      logger.log('duplicate key value violates unique constraint "x" Key (email)=(ada@example.com) already exists');
      logger.log({ msg: 'structured', path: '/v1/members/phone:+14155550100', note: 'ada@example.com' }, 'Ctx');
    });
    const all = written.join('');
    const decoded = written.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(JSON.stringify(decoded)).toContain('invalid input syntax for type bigint: \\"[redacted]\\"');
    expect(decoded.map((d) => d.msg)).toContain('unhandled error: invalid input syntax for type bigint: "[redacted]"');
    expect(all).not.toContain('ada@example.com');
    expect(all).not.toContain('14155550100');
    expect(written.length).toBeGreaterThanOrEqual(5);
  });

  it('writes one JSON object per line: level name, UTC ISO time, service, context, msg; request_id inside a request', () => {
    const written = capture(() => {
      const logger = new RedactingLogger();
      logger.log('outside', 'Test');
      withRequestId('req-abc', () => logger.warn('inside', 'Test'));
    });
    expect(written).toHaveLength(2);
    for (const line of written) {
      expect(line.endsWith('\n')).toBe(true);
      expect(line.trimEnd()).not.toContain('\n');
      expect(line).not.toMatch(/\u001b\[/); // no ANSI colours
    }
    const [outside, inside] = written.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(outside).toMatchObject({ level: 'info', context: 'Test', msg: 'outside', service: expect.any(String) });
    expect(outside.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(outside.request_id).toBeUndefined();
    expect(inside).toMatchObject({ level: 'warn', msg: 'inside', request_id: 'req-abc' });
  });

  it('honours the level: debug lines only when asked for', () => {
    const quiet = capture(() => new RedactingLogger('info').debug('hidden', 'Test'));
    const loud = capture(() => new RedactingLogger('debug').debug('shown', 'Test'));
    new RedactingLogger('info');
    expect(quiet).toEqual([]);
    expect(JSON.parse(loud[0])).toMatchObject({ level: 'debug', msg: 'shown' });
  });
});
