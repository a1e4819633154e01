import { afterAll, beforeAll } from 'vitest';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startThrowawayKafka, type ThrowawayKafka } from '../support/throwaway-kafka.js';
import { scaled } from '../support/time-scale.js';
import { killAllFleets, testPool } from './harness.js';

export type FaultEnvironment = { kafka: ThrowawayKafka; db: TestDatabase; pool: pg.Pool };

/**
 * A broker of the test file's own (never the shared one; extraConfig: server.properties lines
 * that override the script's) and a database, made before its tests and removed after them,
 * with every process the file started. Read the fields inside tests, once beforeAll has run.
 */
export function useBrokerAndDatabase(extraConfig = ''): FaultEnvironment {
  const env = {} as FaultEnvironment;
  beforeAll(async () => {
    // Both in parallel, but each kept as soon as it exists: if one fails, afterAll still removes the other.
    const [k, d] = await Promise.allSettled([startThrowawayKafka(extraConfig), createTestDatabase()]);
    if (k.status === 'fulfilled') env.kafka = k.value;
    if (d.status === 'fulfilled') env.db = d.value;
    if (k.status === 'rejected') throw k.reason;
    if (d.status === 'rejected') throw d.reason;
    env.pool = testPool(env.db.url);
  }, scaled(300_000));

  afterAll(async () => {
    await killAllFleets();
    await env.pool?.end();
    await env.db?.drop();
    await env.kafka?.destroy();
  }, scaled(180_000));
  return env;
}
