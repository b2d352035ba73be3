import { INestApplication } from '@nestjs/common';
import { AppConfig } from '@loyalty/platform';
import { configureHttp } from './http/configure-http';
import { validationPipe } from './http/validation';
import { installLeanRoutes } from './http/lean-routes';
import { AuthGuard } from './auth/auth.guard';
import { IdempotencyInterceptor } from './idempotency/idempotency.interceptor';
import { ProblemFilter } from './http/problem.filter';
import { installHttpMetrics } from '@loyalty/runtime';
import { buildOpenApiDocument } from './openapi/document';
import { serveApiDocs } from './openapi/docs-ui';

/** Everything the HTTP app needs before listen(): middleware, validation, OpenAPI at /openapi.json and docs at /docs. */
export const configureGateway = (app: INestApplication, config: AppConfig): void => {
  configureHttp(app, config);
  installHttpMetrics(app);
  const pipe = validationPipe();
  app.useGlobalPipes(pipe);
  installLeanRoutes(app, () => ({
    adapter: app.getHttpAdapter(), guard: app.get(AuthGuard), pipe, idempotency: app.get(IdempotencyInterceptor), filter: app.get(ProblemFilter),
  }));
  serveApiDocs(app, buildOpenApiDocument(app, { serverUrl: config.baseUrl }));
};
