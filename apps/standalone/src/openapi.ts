import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import type { Pool } from 'pg';
import type { EventStore } from '@loyalty/event-store';
import { GatewayModule, buildOpenApiDocument, errorCatalogueMarkdown } from '@loyalty/gateway';
import type { CommandBus } from '@loyalty/messaging';
import { loadConfig } from '@loyalty/platform';
import { RuntimeModule, createHttpAdapter } from '@loyalty/runtime';

/**
 * The OpenAPI document of the HTTP edge without a database: Nest's preview mode scans the
 * gateway's controllers and DTOs without instantiating anything, so nothing connects anywhere.
 * The committed libs/sdk/openapi.json is this document; the served /openapi.json differs only in
 * `servers`.
 */
export const generateOpenApiDocument = async (): Promise<OpenAPIObject> => {
  const config = { ...loadConfig({}), adminToken: 'unused', adminTokenGenerated: false };
  @Module({ imports: [RuntimeModule.forRoot(config, {} as Pool, {} as EventStore, {} as CommandBus), GatewayModule] })
  class ApiDescriptionModule {}
  const app = await NestFactory.create(ApiDescriptionModule, createHttpAdapter(), { preview: true, logger: false, abortOnError: false });
  try {
    return buildOpenApiDocument(app);
  } finally {
    await app.close();
  }
};

/** The generated artefacts, by path from the repository root (the SDK types come from the document, by openapi-typescript). */
export const apiArtefacts = async (): Promise<Record<string, string>> => ({
  'libs/sdk/openapi.json': `${JSON.stringify(await generateOpenApiDocument(), null, 2)}\n`,
  'docs/errors.md': errorCatalogueMarkdown(),
});
