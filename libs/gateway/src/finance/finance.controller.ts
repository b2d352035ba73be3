import { Controller, Get, Inject, Param, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { PATTERNS } from '@loyalty/contracts';
import { AppConfig, tenantKey } from '@loyalty/platform';
import { isFreshForExpress, sendNotModified } from '@loyalty/runtime';
import { ProgramStore } from '@loyalty/programs';
import { AdminOnly, RequireScopes } from '../auth/auth.decorators';
import { Bus } from '../http/bus';
import { GatewayRequest } from '../http/request-context';
import { APP_CONFIG } from '../tokens';
import { LEDGER_ENTRY_CSV_COLUMNS, csvLine } from './csv';
import { AdminRollForwardQuery, LedgerEntriesQuery, RollForwardQuery } from './finance.dto';

const P = PATTERNS.ledger;

// the `accepts` negotiation Express's `req.accepts` ran (same package), so `Accept` is read as before
const accepts = require('accepts') as (req: GatewayRequest['raw']) => { types(types: string[]): string | false };

type EntryPage = { data: Record<string, unknown>[]; pagination: { cursor: string | null } };

/** Closing the books (decisions §9a): roll-forward and the period's journal (the point-in-time liability is ProgramController's). Scope `read`. */
@ApiTags('finance')
@ApiBearerAuth()
@Controller('v1')
export class FinanceController {
  constructor(private readonly bus: Bus, private readonly programs: ProgramStore, @Inject(APP_CONFIG) private readonly config: AppConfig) {}


  @Get('tenant/liability/roll-forward')
  @RequireScopes('read')
  async rollForward(@Req() req: GatewayRequest, @Query() query: RollForwardQuery) {
    return { data: await this.bus.request(req, P.rollForward, { query: { from: query.from, to: query.to } }) };
  }

  /** JSON pages, or with `Accept: text/csv` the whole period streamed page by page (constant memory). */
  @Get('ledger-entries')
  @RequireScopes('read')
  async entries(@Req() req: GatewayRequest, @Res() reply: FastifyReply, @Query() query: LedgerEntriesQuery) {
    const wantsCsv = accepts(req.raw).types(['application/json', 'text/csv']) === 'text/csv';
    if (!wantsCsv) {
      const page = await this.bus.request<EntryPage>(req, P.financeEntries, { query });
      // written with Express's res.json before: a fresh request (If-None-Match: *) had its 304
      if (isFreshForExpress(reply)) sendNotModified(reply);
      else reply.send(page);
      return;
    }
    // no pagination in CSV: limit and cursor do not apply; the first page is fetched before any byte
    // is sent, so a refused query is still a problem response
    // the period's end is fixed before the first page (default: the programme time now), so the export never grows while it runs
    // rows per bus request: by default the API's largest page (a reply stays far below Kafka's 1 MB)
    const pageRows = this.config.exportPageRows ?? 1000;
    const base = { from: query.from, to: query.to ?? (await this.programs.now(req.auth!.tenant)).toISOString(), type: query.type };
    let page = await this.bus.request<EntryPage>(req, P.financeEntries, { query: { ...base, limit: pageRows } });
    // streamed on the raw response: the headers set so far (request id, rate limit) go with it
    const res = reply.raw;
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined && !res.hasHeader(name)) res.setHeader(name, value);
    reply.hijack();
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/csv; charset=utf-8');
    res.setHeader('Content-Disposition', 'attachment; filename="ledger-entries.csv"');
    let closed = false;
    res.on('close', () => { closed = true; });
    const write = async (chunk: string) => {
      if (closed || res.write(chunk)) return;
      // back-pressure: wait until the client has taken what is buffered (or has gone)
      await new Promise<void>((resolve) => {
        if (closed) { resolve(); return; }
        const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
        res.on('drain', done);
        res.on('close', done);
      });
    };
    try {
      await write(csvLine(LEDGER_ENTRY_CSV_COLUMNS));
      for (;;) {
        let chunk = '';
        for (const e of page.data) chunk += csvLine(LEDGER_ENTRY_CSV_COLUMNS.map((c) => e[c]));
        if (chunk) await write(chunk);
        if (closed || !page.pagination.cursor) break;
        page = await this.bus.request<EntryPage>(req, P.financeEntries, { query: { ...base, limit: pageRows, cursor: page.pagination.cursor } });
      }
      res.end();
    } catch {
      // the status line is gone: a truncated body must not pass for a complete export
      res.destroy();
    }
  }
}

/** The admin plane's view of the same roll-forward (decisions §10), for the admin CLI. */
@ApiTags('admin')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/v1')
export class FinanceAdminController {
  constructor(private readonly programs: ProgramStore, private readonly bus: Bus) {}

  @Get('programs/:pid/finance/roll-forward')
  async rollForward(@Param('pid') pid: string, @Query() query: AdminRollForwardQuery) {
    await this.programs.get(pid);
    const tenant = tenantKey({ programId: pid, mode: query.mode ?? 'live' });
    return { data: await this.bus.requestAs(tenant, P.rollForward, { query: { from: query.from, to: query.to } }) };
  }
}
