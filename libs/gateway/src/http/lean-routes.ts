import { INestApplication, PipeTransform, RequestMethod, Type } from '@nestjs/common';
import {
  EXCEPTION_FILTERS_METADATA, GUARDS_METADATA, HEADERS_METADATA, HTTP_CODE_METADATA, INTERCEPTORS_METADATA, METHOD_METADATA, PATH_METADATA,
  PIPES_METADATA, REDIRECT_METADATA, RENDER_METADATA, RESPONSE_PASSTHROUGH_METADATA, ROUTE_ARGS_METADATA, SSE_METADATA, VERSION_METADATA,
} from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { ModulesContainer } from '@nestjs/core';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { fastifyOf } from '@loyalty/runtime';
import { isObservable, lastValueFrom } from 'rxjs';
import { AuthGuard, RouteAccess } from '../auth/auth.guard';
import { IdempotencyInterceptor, IdempotencyMode } from '../idempotency/idempotency.interceptor';
import { ProblemFilter } from './problem.filter';
import { GatewayRequest } from './request-context';

/**
 * The lean route executor (issue 7, twenty-third round). Nest registers every controller route with
 * Fastify as a handler that, per request, builds execution contexts, runs the guards through a
 * consumer, the interceptors as an rxjs chain, the pipes through another consumer, reads each
 * route's decorators again through the Reflector, and catches errors in an exceptions layer. For
 * the routes whose decorators use only what this gateway uses (the global AuthGuard, the
 * IdempotencyInterceptor, the global validation pipe, the global ProblemFilter; `@Req`, `@Res`
 * with passthrough, `@Body`, `@Param`, `@Query`, `@Headers`; `@HttpCode`), the Fastify handler is
 * replaced, as the route is registered, by one that does the same steps in the same order with the
 * same instances' plain methods, every decorator read once at start:
 *
 *   guard (authentication, rate limit, scopes) → status → Idempotency-Key → pipes (validation) → the
 *   controller's method → the reply; any error → the problem filter.
 *
 * A route using anything else (a route-level guard, pipe, filter, another interceptor, `@Header`,
 * a response it writes itself, SSE, redirects, versions) keeps Nest's handler. `LOYALTY_LEAN_ROUTES=0`
 * keeps Nest's handler for every route.
 */

export interface LeanRouteParts {
  /** Nest's HTTP adapter: the reply is sent as Nest sends it (`reply`: a StreamableFile's headers and stream, any other body to Fastify). */
  adapter: { reply(response: unknown, body: unknown, statusCode?: number): unknown };
  guard: AuthGuard;
  pipe: PipeTransform;
  idempotency: IdempotencyInterceptor;
  filter: ProblemFilter;
}

type Extract = (req: GatewayRequest, reply: FastifyReply) => unknown;
interface Param { index: number; extract: Extract; pipe: { type: 'body' | 'query' | 'param'; metatype: Type | undefined; data: string | undefined } | null }

interface Target { instance: object; controller: Type; method: string; callback: (...args: unknown[]) => unknown }

const METHOD_NAMES: Partial<Record<RequestMethod, string>> = {
  [RequestMethod.GET]: 'GET', [RequestMethod.POST]: 'POST', [RequestMethod.PUT]: 'PUT', [RequestMethod.DELETE]: 'DELETE', [RequestMethod.PATCH]: 'PATCH',
};

const asList = (v: unknown): string[] => (Array.isArray(v) ? v : [v ?? '']).map(String);
/** Nest's route path: the controller's path and the method's joined, one leading slash, no trailing one. */
const joinPath = (controller: string, method: string): string => {
  const joined = `/${controller}/${method}`.replace(/\/+/g, '/');
  return joined.length > 1 ? joined.replace(/\/$/, '') : joined;
};

const hasAny = (keys: string[], ...targets: object[]): boolean =>
  targets.some((t) => keys.some((k) => { const v = Reflect.getMetadata(k, t); return Array.isArray(v) ? v.length > 0 : v !== undefined; }));

/** Why a route keeps Nest's handler, or null when the lean executor can run it. */
export const leanRefusal = (t: Target, idempotency: Type): string | null => {
  if (hasAny([GUARDS_METADATA, PIPES_METADATA, EXCEPTION_FILTERS_METADATA, VERSION_METADATA], t.controller, t.callback)) return 'route-level guard, pipe, filter or version';
  if (hasAny([HEADERS_METADATA, REDIRECT_METADATA, RENDER_METADATA, SSE_METADATA], t.callback)) return 'response headers, redirect, render or SSE';
  const interceptors = [...(Reflect.getMetadata(INTERCEPTORS_METADATA, t.controller) ?? []), ...(Reflect.getMetadata(INTERCEPTORS_METADATA, t.callback) ?? [])] as unknown[];
  if (interceptors.some((i) => i !== idempotency)) return 'an interceptor other than IdempotencyInterceptor';
  for (const p of routeParams(t)) {
    if (!SUPPORTED_PARAMS.has(p.type)) return `parameter ${p.key}`;
    if (p.pipes?.length) return 'a parameter pipe';
    if (p.type === RouteParamtypes.RESPONSE && Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, t.controller, t.method) !== true) return 'a response the handler writes itself';
  }
  return null;
};

/** A route's parameter decorators as Nest stores them (`"<type>:<index>"` → index, data, pipes), with the type read from the key. */
const routeParams = (t: Target): { key: string; type: number; index: number; data?: string; pipes?: unknown[] }[] =>
  Object.entries((Reflect.getMetadata(ROUTE_ARGS_METADATA, t.controller, t.method) ?? {}) as Record<string, { index: number; data?: string; pipes?: unknown[] }>)
    .map(([key, arg]) => ({ key, type: Number(key.split(':')[0]), ...arg }));

const SUPPORTED_PARAMS = new Set<number>([RouteParamtypes.REQUEST, RouteParamtypes.RESPONSE, RouteParamtypes.BODY, RouteParamtypes.QUERY, RouteParamtypes.PARAM, RouteParamtypes.HEADERS]);
const PIPE_TYPES: Partial<Record<number, 'body' | 'query' | 'param'>> = { [RouteParamtypes.BODY]: 'body', [RouteParamtypes.QUERY]: 'query', [RouteParamtypes.PARAM]: 'param' };

/** A property of an object body, as Nest's params factory picks one (own properties only of anything else). */
const bodyProperty = (body: unknown, key: string): unknown =>
  (body !== null && typeof body === 'object' && !Array.isArray(body) && !ArrayBuffer.isView(body)) || (body != null && Object.prototype.hasOwnProperty.call(Object(body), key))
    ? (body as Record<string, unknown>)[key]
    : undefined;

const extractor = (type: number, data: string | undefined): Extract => {
  switch (type) {
    case RouteParamtypes.REQUEST: return (req) => req;
    case RouteParamtypes.RESPONSE: return (_req, reply) => reply;
    case RouteParamtypes.BODY: return data ? (req) => (req.body ? bodyProperty(req.body, data) : req.body) : (req) => req.body;
    case RouteParamtypes.QUERY: return data ? (req) => (req.query as Record<string, unknown>)[data] : (req) => req.query;
    case RouteParamtypes.PARAM: return data ? (req) => (req.params as Record<string, unknown>)[data] : (req) => req.params;
    default: { const name = data?.toLowerCase(); return name ? (req) => req.headers[name] : (req) => req.headers; }
  }
};

/** The Fastify handler doing what Nest's would for this route (see the comment at the top). */
const leanHandler = (t: Target, parts: LeanRouteParts, status: number) => {
  const targets: [Function, Function] = [t.callback, t.controller];
  const access: RouteAccess = parts.guard.accessOf(targets);
  const mode: IdempotencyMode = parts.idempotency.modeOf(targets);
  const paramtypes = (Reflect.getMetadata('design:paramtypes', t.instance, t.method) ?? []) as (Type | undefined)[];
  const params: Param[] = routeParams(t).map(({ type, index, data }) => {
    const pipeType = PIPE_TYPES[type];
    return { index, extract: extractor(type, data), pipe: pipeType ? { type: pipeType, metatype: paramtypes[index], data } : null };
  });
  const argc = params.reduce((n, p) => Math.max(n, p.index + 1), 0);
  const { adapter, guard, pipe, idempotency, filter } = parts;

  const call = async (req: GatewayRequest, reply: FastifyReply): Promise<unknown> => {
    const values = new Array<unknown>(argc).fill(undefined);
    // every parameter's pipes at once, as Nest's pipes consumer
    await Promise.all(params.map(async (p) => {
      const value = p.extract(req, reply);
      values[p.index] = p.pipe ? await pipe.transform(value, p.pipe) : value;
    }));
    return t.callback.apply(t.instance, values);
  };

  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const req = request as GatewayRequest;
    try {
      await guard.authorize(req, reply, access);
      // Nest sets the route's status before the interceptors and the handler (which may change it)
      reply.code(status);
      const result = await idempotency.around(req, reply, mode, () => call(req, reply));
      // as Nest: an Observable's last value; the status set above (or by the handler) stays
      await adapter.reply(reply, isObservable(result) ? await lastValueFrom(result) : result);
    } catch (e) {
      filter.handle(e, req, reply);
    }
  };
};

/** The controllers' routes by "METHOD /path" (every path of a route with several). */
const routeTable = (app: INestApplication): Map<string, Target> => {
  const table = new Map<string, Target>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const instance = wrapper.instance as object | undefined;
      const controller = wrapper.metatype as Type | undefined;
      if (!instance || !controller || !wrapper.isDependencyTreeStatic()) continue;
      const prefixes = asList(Reflect.getMetadata(PATH_METADATA, controller));
      const proto = Object.getPrototypeOf(instance) as Record<string, unknown>;
      for (const method of Object.getOwnPropertyNames(proto)) {
        const callback = proto[method];
        if (method === 'constructor' || typeof callback !== 'function') continue;
        const path = Reflect.getMetadata(PATH_METADATA, callback) as unknown;
        const verb = METHOD_NAMES[Reflect.getMetadata(METHOD_METADATA, callback) as RequestMethod];
        if (path === undefined || !verb) continue;
        for (const prefix of prefixes) {
          for (const p of asList(path)) table.set(`${verb} ${joinPath(prefix, p)}`, { instance, controller, method, callback: callback as Target['callback'] });
        }
      }
    }
  }
  return table;
};

const installed = new WeakMap<INestApplication, ReadonlySet<string>>();
/** The routes of an app that run on the lean executor ("POST /v1/members"), once the app is initialised. */
export const leanRoutesOf = (app: INestApplication): ReadonlySet<string> => installed.get(app) ?? new Set();

/**
 * Installs the executor: call before the app is initialised (Nest registers its routes with Fastify
 * then). The routes it takes are listed by `leanRoutesOf` as they are registered.
 */
export const installLeanRoutes = (app: INestApplication, parts: () => LeanRouteParts): void => {
  const lean = new Set<string>();
  installed.set(app, lean);
  if (process.env.LOYALTY_LEAN_ROUTES === '0') return;
  let table: Map<string, Target> | null = null;
  let got: LeanRouteParts | null = null;
  fastifyOf(app).addHook('onRoute', (route: RouteOptions) => {
    if (typeof route.method !== 'string' || route.method === 'HEAD') return;
    table ??= routeTable(app);
    const name = `${route.method} ${route.url}`;
    const target = table.get(name);
    if (!target) return;
    if (leanRefusal(target, IdempotencyInterceptor) !== null) return;
    got ??= parts();
    const code = (Reflect.getMetadata(HTTP_CODE_METADATA, target.callback) as number | undefined) ?? (route.method === 'POST' ? 201 : 200);
    const handler = leanHandler(target, got, code);
    // Fastify's router hands an empty parameter ("/members//x") to the handler; Nest's adapter sends it to not-found
    const checksParams = route.url.includes(':');
    route.handler = checksParams
      ? (request: FastifyRequest, reply: FastifyReply) => {
        const params = request.params as Record<string, string>;
        for (const k in params) {
          if (params[k] === '' && k !== '*') {
            reply.callNotFound();
            return;
          }
        }
        return handler(request, reply);
      }
      : handler;
    lean.add(name);
  });
};
