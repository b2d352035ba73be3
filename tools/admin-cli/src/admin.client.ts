import { AdminRequest } from './admin-request.builder';

/** Where and as whom the CLI talks to the admin plane. */
export interface AdminTarget {
  url: string;
  token: string;
  fetch: typeof fetch;
}

export interface AdminResponse {
  status: number;
  body: unknown;
}

/** The service answered with an error (RFC 9457 problem, or anything else that is not 2xx). */
export class AdminApiError extends Error {
  override readonly name = 'AdminApiError';
  constructor(readonly status: number, readonly body: unknown) {
    super(problemMessage(status, body));
  }
}

/** The service could not be reached at all. */
export class AdminUnreachableError extends Error {
  override readonly name = 'AdminUnreachableError';
}

/** `https://host/base/` + `/admin/v1/x` → `https://host/base/admin/v1/x` (a base path is kept). */
export const joinUrl = (base: string, path: string): string => `${base.replace(/\/+$/, '')}${path}`;

export const send = async (target: AdminTarget, req: AdminRequest): Promise<AdminResponse> => {
  const headers: Record<string, string> = {
    authorization: `Bearer ${target.token}`,
    accept: 'application/json, application/problem+json',
    'user-agent': 'loyalty-admin-cli',
  };
  let body: string | undefined;
  if (req.body !== undefined) {
    body = JSON.stringify(req.body);
    headers['content-type'] = 'application/json';
  }
  const url = joinUrl(target.url, req.path);
  let res: Response;
  try {
    res = await target.fetch(url, { method: req.method, headers, body });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new AdminUnreachableError(`cannot reach ${target.url}: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
  }
  const text = await res.text();
  let parsed: unknown = text === '' ? null : text;
  try {
    if (text !== '') parsed = JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  if (res.status < 200 || res.status >= 300) throw new AdminApiError(res.status, parsed);
  return { status: res.status, body: parsed };
};

/** What a command prints on success: the `data` of `{ data }`, else the whole body. */
export const resultOf = (res: AdminResponse): unknown => {
  const b = res.body;
  if (b === null || b === undefined) return { status: res.status };
  if (typeof b === 'object' && !Array.isArray(b)) {
    const keys = Object.keys(b);
    if (keys.length === 1 && keys[0] === 'data') return (b as { data: unknown }).data;
  }
  return b;
};

/**
 * One readable message for an error response: the problem's title, status and detail, then each
 * validation error as `path: message`.
 */
export const problemMessage = (status: number, body: unknown): string => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    const text = typeof body === 'string' ? body.trim().slice(0, 500) : '';
    return `HTTP ${status}${text ? `: ${text}` : ''}`;
  }
  const p = body as { title?: unknown; detail?: unknown; type?: unknown; errors?: unknown; retry_after?: unknown };
  const slug = typeof p.type === 'string' && p.type.includes('#') ? p.type.slice(p.type.lastIndexOf('#') + 1) : undefined;
  const title = typeof p.title === 'string' && p.title ? p.title : `HTTP ${status}`;
  let line = `${title} (${status}${slug ? ` ${slug}` : ''})`;
  if (typeof p.detail === 'string' && p.detail) line += `: ${p.detail}`;
  const lines = [line];
  if (Array.isArray(p.errors)) {
    for (const e of p.errors) {
      const { path, message } = (e ?? {}) as { path?: unknown; message?: unknown };
      lines.push(`  ${typeof path === 'string' && path ? path : '/'}: ${typeof message === 'string' ? message : JSON.stringify(e)}`);
    }
  }
  if (typeof p.retry_after === 'number') lines.push(`  retry after ${p.retry_after} s`);
  return lines.join('\n');
};
