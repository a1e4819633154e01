import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { inject } from 'vitest';
import { startGateway, type RunningGateway } from '../../src/gateway/gateway.js';
import type { RouteDefinition } from '../../src/gateway/routes/route-definition.js';
import { loadConfig, type Config } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';

/** Test configuration: the real broker and a test database, an ephemeral port, own topic prefix. */
export function testConfig(databaseUrl: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: databaseUrl,
    KAFKA_BROKERS: inject('kafkaBrokers'),
    KAFKA_TOPIC_PREFIX: `test-${randomBytes(4).toString('hex')}.`,
    LOG_LEVEL: 'info',
    ...env,
  });
}

export type TestGateway = RunningGateway & { logLines: () => Record<string, unknown>[] };

/** A real gateway process-in-process over HTTP; its log lines are kept for assertions. */
export async function startTestGateway(config: Config, extraRoutes: RouteDefinition[] = []): Promise<TestGateway> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const gateway = await startGateway(config, createLogger(config.service.logLevel, 'test-gateway', sink), extraRoutes);
  return { ...gateway, logLines: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}
