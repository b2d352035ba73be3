import { ConsoleLogger, LogLevel } from '@nestjs/common';
import { redactText } from '@loyalty/platform';

/**
 * Every process's logger: each line is passed through redactText before it is written, so no
 * email, phone, person-naming member id, query-string secret or value quoted in a database error
 * reaches the logs, whichever code logged it (ours, Nest's exception handlers, kafkajs).
 */
export class RedactingLogger extends ConsoleLogger {
  constructor(levels: LogLevel[] = ['log', 'warn', 'error']) {
    super({ logLevels: levels });
  }

  protected override stringifyMessage(message: unknown, logLevel: LogLevel): string {
    const text = message instanceof Error ? `${message.name}: ${message.message}` : super.stringifyMessage(message, logLevel);
    return redactText(String(text));
  }

  protected override printStackTrace(stack: string): void {
    super.printStackTrace(typeof stack === 'string' ? redactText(stack) : stack);
  }
}
