import { describe, expect, it } from 'vitest';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { pruneImportJobs } from '../../src/workers/retention/import-jobs.js';
import { bearer } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// Issue 51: the inbound idempotency window is the import job's retention. Inside it a replay
// answers the same job; once the job is pruned, the API no longer knows it (404) and the same
// Idempotency-Key (with the same body or another) is a new import job, never a 409.

const suite = useGatewaySuite({ workers: [inboundWorker, inboundExpressWorker] });
const key = () => suite.demo.clients.all!.apiKey;
const post = (body: unknown, idempotencyKey: string) =>
  suite.api.post('/api/v1/inbound/targets/batch', {
    body,
    headers: { ...bearer(key()), 'idempotency-key': idempotencyKey },
  });
const job = (id: number) => suite.api.get(`/api/v1/import-jobs/${id}`, { headers: bearer(key()) });

async function untilFinished(id: number) {
  await eventually(
    async () =>
      ['Completed', 'CompletedWithErrors', 'Failed'].includes((await job(id)).body.status) ? true : undefined,
    30_000,
    `import job ${id} finished`,
  );
}

describe('the inbound idempotency window is the import job retention', () => {
  it('replays inside it; after the job is pruned, the same key is a new job (same body or not)', async () => {
    const body = { sourceSystem: 'erp', targets: makeTargets(3, 'window') };
    const first = await post(body, 'window-1');
    const other = await post({ ...body, targets: makeTargets(2, 'other') }, 'window-2');
    expect([first.status, other.status]).toEqual([200, 200]);
    await untilFinished(first.body.importJobId);
    await untilFinished(other.body.importJobId);

    const replay = await post(body, 'window-1');
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ importJobId: first.body.importJobId, idempotentReplay: true });
    expect((await post(body, 'window-2')).status).toBe(409); // another body under a key still known

    // Both finished 91 days ago: past the default IMPORT_JOB_RETENTION_DAYS (90).
    await suite.pool.query(`UPDATE import_jobs SET completed_at = now() - interval '91 days' WHERE id = ANY($1)`, [
      [first.body.importJobId, other.body.importJobId],
    ]);
    expect(await pruneImportJobs(suite.pool, suite.config.retention.importJobRetentionMs)).toBe(2);
    expect((await job(first.body.importJobId)).status).toBe(404);

    const again = await post(body, 'window-1');
    expect(again.status).toBe(200);
    expect(again.body.idempotentReplay).toBe(false);
    expect(again.body.importJobId).toBeGreaterThan(other.body.importJobId);
    const changed = await post(body, 'window-2'); // the body it once refused: nothing remembers the first
    expect(changed.status).toBe(200);
    expect(changed.body.idempotentReplay).toBe(false);
    // And the new jobs are replayed as any other, inside their own window.
    expect((await post(body, 'window-1')).body).toMatchObject({
      importJobId: again.body.importJobId,
      idempotentReplay: true,
    });
  });
});
