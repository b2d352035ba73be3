import { Inject, Injectable } from '@nestjs/common';
import { Pool } from 'pg';
import { ProblemData } from '@loyalty/platform';
import { PG_POOL } from '../tokens';
import { GatewayRequest } from './request-context';
import { redactUrl } from './redact';

/**
 * Rejected calls (4xx) per programme, listed in the admin plane for 14 days. Best effort: never fails a request.
 * Paths are stored without personal identifiers (ref:/phone: ids, email filters), which erasure could not reach.
 */
@Injectable()
export class RejectedCallLog {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  record(req: GatewayRequest, status: number, p: ProblemData): void {
    if (!req.auth || status < 400 || status >= 500) return;
    void this.pool.query(
      `insert into gateway.rejected_calls (program_id, mode, key_id, method, path, status, slug, detail, request_id) values ($1,$2,$3,$4,$5,$6,$7,$8,$9)`,
      [req.auth.programId, req.auth.mode, req.auth.keyId, req.method, redactUrl(req.raw.url ?? '').slice(0, 2048), status, p.slug, p.detail ?? null, req.requestId],
    ).catch(() => undefined);
  }

  /** The sandbox wipe: the programme's rejected test-mode calls go with the sandbox. */
  async forgetSandbox(programId: string): Promise<void> {
    await this.pool.query(`delete from gateway.rejected_calls where program_id = $1 and mode = 'test'`, [programId]);
  }

  async list(programId: string, limit = 100): Promise<unknown[]> {
    await this.pool.query(`delete from gateway.rejected_calls where at < now() - interval '14 days'`);
    const { rows } = await this.pool.query(
      `select method, path, status, slug, detail, mode, key_id, request_id, at from gateway.rejected_calls
       where program_id = $1 and at >= now() - interval '14 days' order by id desc limit $2`, [programId, limit]);
    return rows.map((r) => ({ ...r, at: (r.at as Date).toISOString() }));
  }
}
