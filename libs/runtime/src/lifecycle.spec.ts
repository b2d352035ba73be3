import { EventEmitter } from 'node:events';
import { keepRunningOnUnhandledRejection } from './lifecycle';

describe('keepRunningOnUnhandledRejection (issue 8)', () => {
  it('logs an unhandled rejection, redacted and with its stack, instead of letting it end the process', () => {
    const proc = new EventEmitter();
    const lines: string[] = [];
    keepRunningOnUnhandledRejection('ingest', proc, (t) => lines.push(t));
    proc.emit('unhandledRejection', new Error('reply to jane@example.com could not be sent'), Promise.resolve());
    proc.emit('unhandledRejection', 'plain reason', Promise.resolve());
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^loyalty ingest: unhandled promise rejection \(the process keeps running\): Error: reply to \[email\] could not be sent\n {4}at /);
    expect(lines[0]).not.toContain('jane@example.com');
    expect(lines[1]).toBe('loyalty ingest: unhandled promise rejection (the process keeps running): plain reason\n');
  });
});
