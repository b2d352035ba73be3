import { DEFAULT_SETTINGS } from '@loyalty/contracts';
import { parseTenantKey } from '@loyalty/platform';
import { ProgramStore } from '@loyalty/programs';
import type { ProgramInfo } from './payloads';
import type { ProgramInfoSource } from './webhook-events.projection';

const TTL_MS = 5_000;

/** The programme settings payloads need (currency name, expiry policy, warning lead), cached briefly per programme. */
export const programInfoSource = (programs: ProgramStore): ProgramInfoSource => {
  const cache = new Map<string, { at: number; info: ProgramInfo }>();
  return async (tenant) => {
    const pid = parseTenantKey(tenant).programId;
    const hit = cache.get(pid);
    if (hit && Date.now() - hit.at < TTL_MS) return hit.info;
    const p = await programs.find(pid);
    // a programme that is gone still lets the subscription move on
    const info: ProgramInfo = {
      currency: p?.currency_name ?? '',
      expiry: p?.settings.expiry ?? null,
      expiryWarningDays: p?.settings.expiry_warning_days ?? DEFAULT_SETTINGS.expiry_warning_days,
    };
    cache.set(pid, { at: Date.now(), info });
    return info;
  };
};
