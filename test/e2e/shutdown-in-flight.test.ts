import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/shared/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { bearer, createDemo } from '../support/fixtures.js';
import { testConfig } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { spawnGateway } from '../support/processes.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';
import { trickledUpload } from '../support/trickled-upload.js';

// Issue 30: a gateway told to stop while a slow upload is in flight answers it and then exits 0 by
// itself. The answer closes its keep-alive connection; held open, it kept server.close() waiting
// until SHUTDOWN_TIMEOUT_MS, and the process exited 1 (or was killed by a runtime's shorter grace).
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

describe('gateway shutdown with a request in flight', () => {
  it('answers a trickling upload and exits 0', async () => {
    const config = testConfig(db.url);
    const gateway = spawnGateway(config, { SHUTDOWN_TIMEOUT_MS: String(scaled(10_000)) });
    const url = await gateway.listening(scaled(60_000));
    const pool = createPool(db.url, 2, 'test');
    const demo = await createDemo(pool).finally(() => pool.end());

    const pieces = 10;
    const upload = trickledUpload(
      `${url}/api/v1/inbound/targets/batch`,
      { ...bearer(demo.clients.all!.apiKey), 'content-type': 'application/json' },
      new TextEncoder().encode(JSON.stringify({ sourceSystem: 'shutdown', targets: makeTargets(5, 'shutdown') })),
      { durationMs: 2000, pieces },
    );
    await eventually(() => (upload.sent() >= 2 ? true : undefined), 30_000, 'the upload under way');
    const exitCode = gateway.kill('SIGTERM');
    const answer = await upload.answer;
    expect(upload.sent()).toBe(pieces);
    expect(answer.status, answer.text).toBe(200);
    expect(await exitCode, gateway.output().slice(-2000)).toBe(0);
  });
});
