import { RedactingLogger } from './redacting-logger';

describe('RedactingLogger', () => {
  it('writes no value quoted by a database error, no email and no phone, in messages or stacks', () => {
    const written: string[] = [];
    const out = jest.spyOn(process.stdout, 'write').mockImplementation(((c: unknown) => { written.push(String(c)); return true; }) as never);
    const err = jest.spyOn(process.stderr, 'write').mockImplementation(((c: unknown) => { written.push(String(c)); return true; }) as never);
    try {
      const logger = new RedactingLogger();
      const e = new Error('invalid input syntax for type bigint: "ada@example.com"');
      logger.error(`unhandled error: ${e.message}`, e.stack, 'ProblemFilter');
      logger.error(e);
      logger.warn('customer unmatched: phone +14155550100 is not valid');
      logger.log('duplicate key value violates unique constraint "x" Key (email)=(ada@example.com) already exists');
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
    const all = written.join('');
    expect(all).toContain('invalid input syntax for type bigint: "[redacted]"');
    expect(all).not.toContain('ada@example.com');
    expect(all).not.toContain('14155550100');
    expect(written.length).toBeGreaterThanOrEqual(4);
  });
});
