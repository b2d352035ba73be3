import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { apiReference } from '@scalar/nestjs-api-reference';
import { AppConfig } from '@loyalty/platform';
import { configureHttp } from './http/configure-http';
import { validationPipe } from './http/validation';
import { metricsMiddleware } from '@loyalty/runtime';

/** Everything the HTTP app needs before listen(): middleware, validation, OpenAPI at /openapi.json and docs at /docs. */
export const configureGateway = (app: INestApplication, config: AppConfig): void => {
  configureHttp(app, config);
  app.use(metricsMiddleware);
  app.useGlobalPipes(validationPipe());
  const document = SwaggerModule.createDocument(app, new DocumentBuilder()
    .setTitle('Loyalty programme service')
    .setDescription('Points, tiers, referrals and vouchers as an API. Errors are RFC 9457 problems; amounts are integers in minor units.')
    .setVersion('1.0')
    .addBearerAuth()
    .build());
  const http = app.getHttpAdapter().getInstance();
  http.get('/openapi.json', (_req: unknown, res: { json: (b: unknown) => void }) => res.json(document));
  app.use('/docs', apiReference({ url: '/openapi.json', theme: 'default' } as never));
};
