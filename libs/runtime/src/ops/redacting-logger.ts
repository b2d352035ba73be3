import { Logger as PinoNestLogger, PinoLogger } from 'nestjs-pino';
import { rootLogger, setLogLevel } from './logging';

/**
 * Every process's Nest logger: nestjs-pino over the process's pino logger (see logging.ts), so
 * Nest's own lines, ours and kafkajs' (routed through Nest's Logger) are JSON, redacted, and carry
 * the request id of the work they belong to.
 */
export class RedactingLogger extends PinoNestLogger {
  constructor(level?: string) {
    super(new PinoLogger({ pinoHttp: { logger: rootLogger() } }), {});
    if (level) setLogLevel(level);
  }
}
