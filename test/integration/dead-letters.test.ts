import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../../src/admin/run.js';
import { deadLetterKinds } from '../../src/shared/dead-letters/kinds.js';
import type { MessageBus } from '../../src/shared/kafka/bus.js';
import { createLogger } from '../../src/shared/logger.js';
import { appointmentsWorker } from '../../src/workers/appointments/kind.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { jobsWorker } from '../../src/workers/jobs/kind.js';
import { materialsWorker } from '../../src/workers/materials/kind.js';
import { createScrapeQueries, type ScrapeQueries } from '../../src/workers/ops/scrape-queries.js';
import { accessToken, bearerToken } from '../e2e/oauth-helpers.js';
import { bearer } from '../support/fixtures.js';
import { eventually, testBus } from '../support/kafka.js';
import { materialsPath } from '../support/materials.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';

// Issue 27: dead letters through the admin CLI. Real poison: a CHECK constraint added to the
// test database refuses some records (SQLSTATE 23514, permanent: dead-lettered at once); the
// operator then "fixes the cause" (drops the constraint) and replays. Checked: lists and their
// filters, show, dry runs that change nothing, exact counters and states after replay, webhook
// events raised once, a second delivery of a replayed message applied once, purge, the ledger of
// actions, and the dead-letter depth the metric reports.
const suite = useGatewaySuite({
  workers: [inboundWorker, inboundExpressWorker, materialsWorker, jobsWorker, appointmentsWorker],
  // Small chunks: a batch of ten targets spans several chunks (several dead letters of one job).
  env: () => ({ INBOUND_CHUNK_MAX_BYTES: '4096', AUTH_CACHE_TTL_MS: '0' }),
});

let bus: MessageBus;
let queries: ScrapeQueries;
beforeAll(() => {
  bus = testBus();
  queries = createScrapeQueries(suite.db.url, 10_000, createLogger('warn', 'dead-letters-test'));
});
// A test that fails midway must not leave its poison to the next.
afterEach(async () => {
  for (const [table, constraint] of [
    ['targets', 'dlq_test_targets'],
    ['targets', 'dlq_test_express'],
    ['stock_movements', 'dlq_test_moves'],
    ['field_jobs', 'dlq_test_jobs'],
    ['appointment_requests', 'dlq_test_appointments'],
  ])
    await suite.pool.query(`ALTER TABLE ${table} DROP CONSTRAINT IF EXISTS ${constraint}`);
});
afterAll(async () => {
  await bus?.close();
  await queries?.close();
});

/** The admin CLI, in this process, on the suite's database and topics. */
async function cli(...argv: string[]): Promise<any> {
  let out = '';
  let err = '';
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk, _enc, done) {
        append(String(chunk));
        done();
      },
    });
  const code = await runAdmin(argv, {
    stdout: sink((s) => (out += s)),
    stderr: sink((s) => (err += s)),
    env: {
      DATABASE_URL: suite.db.url,
      KAFKA_BROKERS: suite.config.kafka.brokers.join(','),
      KAFKA_TOPIC_PREFIX: suite.config.kafka.topicPrefix,
    },
  });
  if (code !== 0) throw new Error(`admin ${argv.join(' ')} exited ${code}: ${err}`);
  return JSON.parse(out);
}

const kind = (name: string) => deadLetterKinds(suite.config.kafka).find((k) => k.name === name)!;
const depth = async (name: string) => {
  const topic = kind(name).dlqTopic;
  return (await queries.deadLetterDepths(new Map([[topic, await bus.topicOffsets(topic, 10_000)]]))).get(topic);
};
const events = async (type: string, field: string, id: string) =>
  (
    await suite.pool.query(
      `SELECT count(*)::int AS n FROM webhook_events WHERE type = $1 AND body::jsonb->'data'->>$2 = $3`,
      [type, field, id],
    )
  ).rows[0].n as number;
const job = async (id: number) =>
  (
    await suite.pool.query(
      `SELECT status, applied_count AS applied, failed_count AS failed, accepted_count AS accepted, failure_reason,
              jsonb_array_length(errors) AS errors,
              (SELECT count(*)::int FROM targets t WHERE t.last_import_job_id = j.id) AS targets
         FROM import_jobs j WHERE id = $1`,
      [id],
    )
  ).rows[0];
const untilFinal = (id: number) =>
  eventually(
    async () =>
      (await job(id))?.status.startsWith('Complet') || (await job(id))?.status === 'Failed' ? job(id) : undefined,
    60_000,
    `import job ${id} final`,
  );
const untilListed = (args: string[], count: number) =>
  eventually(
    async () => {
      const listed = await cli('dead-letters', 'list', ...args);
      return listed.count >= count ? listed : undefined;
    },
    60_000,
    `${count} dead letters for ${args.join(' ')}`,
  );
const apiKey = () => suite.demo.clients.all!.apiKey;

// Each test's waits are up to 60 s each: the test's own limit is longer than any one of them, so
// a wait that runs out names itself instead of the test timing out silently.
describe('dead letters (issue 27)', { timeout: scaled(240_000) }, () => {
  it('inbound: list, filter, show, dry run, replay one then the rest; counters exact, one event, a second delivery changes nothing', async () => {
    await suite.pool.query(
      `ALTER TABLE targets ADD CONSTRAINT dlq_test_targets CHECK (name NOT LIKE 'POISON%') NOT VALID`,
    );
    const targets = makeTargets(10, 'dlq', 7).map((t, i) => ({
      ...t,
      name: i >= 4 ? `POISON ${t.name}` : t.name,
      metadata: { ...t.metadata, padding1: 'x'.repeat(900), padding2: 'y'.repeat(900) },
    }));
    const res = await suite.api.post('/api/v1/inbound/targets/batch', {
      headers: bearer(apiKey()),
      body: { sourceSystem: 'dlq-test', externalBatchId: 'DLQ-1', targets },
    });
    expect(res.status, res.text).toBe(200);
    const id = Number(res.body.importJobId);
    const failed = await untilFinal(id);
    expect(failed.status).toBe('CompletedWithErrors');
    expect(failed.applied + failed.failed).toBe(10);
    expect(failed.failed).toBeGreaterThanOrEqual(6);
    const { rows: chunks } = await suite.pool.query(
      `SELECT chunk_index FROM import_job_chunks WHERE import_job_id = $1 AND failed_count > 0 ORDER BY chunk_index`,
      [id],
    );
    expect(chunks.length).toBeGreaterThanOrEqual(2);

    const listed = await untilListed(['--kind', 'inbound', '--record', String(id)], chunks.length);
    expect(listed.count).toBe(chunks.length);
    expect(listed.deadLetters.map((d: any) => d.record.chunkIndex).sort()).toEqual(chunks.map((c) => c.chunk_index));
    for (const d of listed.deadLetters) {
      expect(d).toMatchObject({
        kind: 'inbound',
        errorClass: 'permanent/23514',
        tenantId: suite.demo.tenantId,
        clientId: suite.demo.clients.all!.clientId,
        worker: 'inbound',
        handled: null,
        origin: { topic: kind('inbound').topic },
      });
      expect(d.error).toContain('dlq_test_targets');
    }
    // Filters narrow: by error class, tenant, time and kind.
    expect((await cli('dead-letters', 'list', '--record', String(id), '--error-class', '23')).count).toBe(
      chunks.length,
    );
    expect((await cli('dead-letters', 'list', '--record', String(id), '--error-class', 'transient')).count).toBe(0);
    expect(
      (await cli('dead-letters', 'list', '--record', String(id), '--tenant', '00000000-0000-4000-8000-000000000000'))
        .count,
    ).toBe(0);
    expect((await cli('dead-letters', 'list', '--record', String(id), '--since', '2999-01-01T00:00:00Z')).count).toBe(
      0,
    );
    expect((await cli('dead-letters', 'list', '--record', String(id), '--kind', 'jobs')).count).toBe(0);
    expect(await depth('inbound')).toBe(chunks.length);

    const first = listed.deadLetters[0];
    const shown = await cli('dead-letters', 'show', '--id', first.id);
    expect(shown).toMatchObject({
      id: first.id,
      key: String(id),
      headers: expect.objectContaining({
        'x-dlq-error-class': 'permanent/23514',
        'message-type': 'inbound.targets.chunk',
      }),
      payload: {
        decoded: true,
        type: 'inbound.targets.chunk',
        summary: expect.objectContaining({ importJobId: String(id) }),
      },
      recordNow: { status: 'CompletedWithErrors', chunk: { appliedCount: 0 } },
    });

    // A dry run (the default) shows what would be replayed and changes nothing.
    const dry = await cli('dead-letters', 'replay', '--record', String(id), '--operator', 'kim');
    expect(dry).toMatchObject({ dryRun: true, count: chunks.length, actions: [] });
    expect(await job(id)).toEqual(failed);

    // The cause is fixed; one dead letter first. Its items are read before the replay: once the
    // worker has revived the chunk its ledger row counts none failed (a loaded machine's worker
    // could win that race, and the wait below then looked for the wrong count).
    const oneChunkItems = (
      await suite.pool.query(
        `SELECT failed_count FROM import_job_chunks WHERE import_job_id = $1 AND chunk_index = $2`,
        [id, first.record.chunkIndex],
      )
    ).rows[0].failed_count as number;
    expect(oneChunkItems).toBeGreaterThan(0);
    await suite.pool.query(`ALTER TABLE targets DROP CONSTRAINT dlq_test_targets`);
    const one = await cli(
      'dead-letters',
      'replay',
      '--id',
      first.id,
      '--execute',
      '--operator',
      'kim',
      '--note',
      'grant fixed',
    );
    expect(one).toMatchObject({ dryRun: false, count: 1, byKind: { inbound: 1 } });
    const afterOne = await eventually(
      async () => ((await job(id)).applied === failed.applied + oneChunkItems ? job(id) : undefined),
      60_000,
      'first replay applied',
    );
    expect(afterOne).toMatchObject({ status: 'CompletedWithErrors', failed: failed.failed - oneChunkItems });
    expect(await events('import_job.completed', 'importJobId', String(id))).toBe(0);

    // The rest: every item applied, the job Completed, its event raised once.
    const rest = await cli(
      'dead-letters',
      'replay',
      '--kind',
      'inbound',
      '--record',
      String(id),
      '--execute',
      '--operator',
      'kim',
    );
    expect(rest.count).toBe(chunks.length - 1);
    const done = await eventually(
      async () => ((await job(id)).status === 'Completed' ? job(id) : undefined),
      60_000,
      'job Completed',
    );
    expect(done).toMatchObject({ applied: 10, failed: 0, accepted: 10, failure_reason: null, errors: 0, targets: 10 });
    await eventually(
      async () => ((await events('import_job.completed', 'importJobId', String(id))) === 1 ? true : undefined),
      10_000,
      'event',
    );

    // Replayed ones are handled: neither listed nor replayed again; the depth is 0.
    expect((await cli('dead-letters', 'list', '--record', String(id))).count).toBe(0);
    expect((await cli('dead-letters', 'list', '--record', String(id), '--include-handled')).count).toBe(chunks.length);
    expect((await cli('dead-letters', 'replay', '--record', String(id), '--execute', '--operator', 'kim')).count).toBe(
      0,
    );
    expect(await depth('inbound')).toBe(0);

    // A replayed message delivered twice (a crash before the ledger's commit) is applied once.
    const [stored] = (await bus.readTopic(kind('inbound').dlqTopic, 30_000)).filter(
      (m) => `inbound/${m.partition}/${m.offset}` === first.id,
    );
    await bus.produce(kind('inbound').topic, [
      { key: stored!.key!, value: stored!.value!, headers: { ...stored!.headers, 'x-dlq-replay-of': first.id } },
    ]);
    await eventually(
      async () =>
        (await bus.consumerLag(`${suite.config.kafka.topicPrefix}inbound`, [kind('inbound').topic], 10_000)).every(
          (l) => l.lag === 0,
        )
          ? true
          : undefined,
      60_000,
      'second delivery consumed',
    );
    expect(await job(id)).toEqual(done);
    expect(await events('import_job.completed', 'importJobId', String(id))).toBe(1);

    const actions = (await cli('dead-letters', 'actions', '--kind', 'inbound')).actions;
    // The replay that found nothing left to do recorded nothing.
    expect(actions.map((a: any) => [a.action, a.operator, a.messageCount])).toEqual([
      ['replay', 'kim', chunks.length - 1],
      ['replay', 'kim', 1],
    ]);
    expect(actions[1]).toMatchObject({ note: 'grant fixed', selection: { ids: [first.id] }, kind: 'inbound' });
  });

  it('express inbound: a Failed single-target job becomes Completed, import_job.failed then import_job.completed once each', async () => {
    await suite.pool.query(
      `ALTER TABLE targets ADD CONSTRAINT dlq_test_express CHECK (name NOT LIKE 'POISON%') NOT VALID`,
    );
    const [target] = makeTargets(1, 'dlq-express', 9);
    const res = await suite.api.post('/api/v1/inbound/targets', {
      headers: bearer(apiKey()),
      body: { sourceSystem: 'dlq-test', ...target, name: 'POISON single' },
    });
    expect(res.status, res.text).toBe(200);
    const id = Number(res.body.importJobId);
    expect(await untilFinal(id)).toMatchObject({ status: 'Failed', applied: 0, failed: 1 });
    const listed = await untilListed(['--kind', 'inbound-express', '--record', String(id)], 1);
    expect(listed.count).toBe(1);
    await suite.pool.query(`ALTER TABLE targets DROP CONSTRAINT dlq_test_express`);
    expect(
      (
        await cli(
          'dead-letters',
          'replay',
          '--kind',
          'inbound-express',
          '--record',
          String(id),
          '--execute',
          '--operator',
          'kim',
        )
      ).count,
    ).toBe(1);
    const done = await eventually(
      async () => ((await job(id)).status === 'Completed' ? job(id) : undefined),
      60_000,
      'Completed',
    );
    expect(done).toMatchObject({ applied: 1, failed: 0, failure_reason: null, errors: 0, targets: 1 });
    expect(await events('import_job.failed', 'importJobId', String(id))).toBe(1);
    expect(await events('import_job.completed', 'importJobId', String(id))).toBe(1);
  });

  it('materials: purge one (hidden, recorded, depth down), replay the other: the usage is booked once', async () => {
    await suite.pool.query(
      `ALTER TABLE stock_movements ADD CONSTRAINT dlq_test_moves CHECK (quantity_delta <> -7.25) NOT VALID`,
    );
    const wo = suite.demo.workOrders[0]!;
    const record = async (eventId: string) => {
      const res = await suite.api.post(materialsPath.byId(wo.workOrderId), {
        headers: bearer(apiKey()),
        body: {
          externalEventId: eventId,
          externalLocationCode: 'WH-MAIN',
          usedAt: '2025-06-01T07:30:00Z',
          materials: [{ sku: 'CU-PIPE-15', quantity: 7.25, unitOfMeasure: 'm' }],
        },
      });
      expect(res.status, res.text).toBe(200);
      return res.body.materialUsageId as string;
    };
    const usage = async (id: string) =>
      (await suite.pool.query(`SELECT status, failure_reason FROM material_usages WHERE id = $1`, [id])).rows[0];
    const moves = async (id: string) =>
      (await suite.pool.query(`SELECT count(*)::int AS n FROM stock_movements WHERE material_usage_id = $1`, [id]))
        .rows[0].n;
    const [kept, purged] = [await record('dlq-keep'), await record('dlq-purge')];
    for (const id of [kept, purged])
      await eventually(async () => ((await usage(id)).status === 'Failed' ? true : undefined), 60_000, `${id} Failed`);
    const listed = await untilListed(['--kind', 'materials'], 2);
    expect(listed.count).toBe(2);
    expect(await depth('materials')).toBe(2);

    const toPurge = listed.deadLetters.find((d: any) => d.record.id === purged);
    expect((await cli('dead-letters', 'purge', '--id', toPurge.id, '--operator', 'kim')).dryRun).toBe(true);
    expect((await cli('dead-letters', 'list', '--kind', 'materials')).count).toBe(2);
    const purge = await cli('dead-letters', 'purge', '--id', toPurge.id, '--execute', '--operator', 'kim');
    expect(purge).toMatchObject({ action: 'purge', count: 1 });
    expect((await cli('dead-letters', 'list', '--kind', 'materials')).deadLetters.map((d: any) => d.record.id)).toEqual(
      [kept],
    );
    expect(await depth('materials')).toBe(1);

    await suite.pool.query(`ALTER TABLE stock_movements DROP CONSTRAINT dlq_test_moves`);
    // Replaying everything of the kind leaves the purged one alone.
    const replay = await cli(
      'dead-letters',
      'replay',
      '--kind',
      'materials',
      '--all',
      '--execute',
      '--operator',
      'kim',
    );
    expect(replay.deadLetters.map((d: any) => d.record.id)).toEqual([kept]);
    await eventually(async () => ((await usage(kept)).status === 'Applied' ? true : undefined), 60_000, 'Applied');
    expect(await usage(kept)).toEqual({ status: 'Applied', failure_reason: null });
    expect(await moves(kept)).toBe(1);
    expect(await usage(purged)).toMatchObject({ status: 'Failed' });
    expect(await events('work_order.materials_recorded', 'materialUsageId', kept)).toBe(1);
    expect(await depth('materials')).toBe(0);
    const actions = (await cli('dead-letters', 'actions', '--kind', 'materials')).actions;
    expect(actions.map((a: any) => [a.action, a.messageCount])).toEqual([
      ['replay', 1],
      ['purge', 1],
    ]);
  });

  it('jobs and appointments: the failed request is materialised, the Failed appointment validated, their events once', async () => {
    await suite.pool.query(
      `ALTER TABLE field_jobs ADD CONSTRAINT dlq_test_jobs CHECK (title <> 'POISON job') NOT VALID`,
    );
    await suite.pool.query(
      `ALTER TABLE appointment_requests ADD CONSTRAINT dlq_test_appointments CHECK (status <> 'Validated' OR external_reference NOT LIKE 'POISON%') NOT VALID`,
    );
    const created = await suite.api.post('/api/v1/connect/jobs', {
      headers: bearer(apiKey()),
      body: {
        externalId: `DLQ-JOB-${Date.now()}`,
        title: 'POISON job',
        jobType: 'REPAIR',
        customer: { name: 'ACME Facilities' },
        site: { address: { line1: 'Hauptstraße 5', postalCode: '10115', city: 'Berlin', countryCode: 'DE' } },
      },
    });
    expect(created.status, created.text).toBe(201);
    const fieldJobId = created.body.fieldJobId as string;
    const token = await accessToken(suite.api, suite.demo.clients.all!);
    const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();
    const submitted = await suite.api.post('/connect/v1/appointment-requests', {
      headers: bearerToken(token),
      body: {
        externalReference: `POISON-${Date.now()}`,
        serviceType: 'repair',
        priority: 'high',
        customer: { name: 'Harbour Hospital' },
        contact: { name: 'Kim Meyer', email: 'kim.meyer@example.com' },
        location: { address: { line1: 'Am Hafen 1', postalCode: '20457', city: 'Hamburg', countryCode: 'DE' } },
        preferredTimeWindows: [{ start: inHours(24), end: inHours(28) }],
      },
    });
    expect(submitted.status, submitted.text).toBe(202);
    const appointmentId = submitted.body.id as string;
    const request = async () =>
      (
        await suite.pool.query(
          `SELECT materialized_at IS NOT NULL AS done, failed_at IS NOT NULL AS failed FROM job_requests WHERE field_job_id = $1`,
          [fieldJobId],
        )
      ).rows[0];
    const appointment = async () =>
      (await suite.pool.query(`SELECT status FROM appointment_requests WHERE id = $1`, [appointmentId])).rows[0].status;
    await eventually(async () => ((await request()).failed ? true : undefined), 60_000, 'job request failed');
    await eventually(async () => ((await appointment()) === 'Failed' ? true : undefined), 60_000, 'appointment Failed');
    const jobs = await untilListed(['--kind', 'jobs', '--record', fieldJobId], 1);
    const appointments = await untilListed(['--kind', 'appointments', '--record', appointmentId], 1);
    expect([jobs.count, appointments.count]).toEqual([1, 1]);
    expect((await cli('dead-letters', 'show', '--id', jobs.deadLetters[0].id)).recordNow).toMatchObject({
      status: 'Failed',
    });

    await suite.pool.query(`ALTER TABLE field_jobs DROP CONSTRAINT dlq_test_jobs`);
    await suite.pool.query(`ALTER TABLE appointment_requests DROP CONSTRAINT dlq_test_appointments`);
    const replayed = await cli(
      'dead-letters',
      'replay',
      '--kind',
      'jobs,appointments',
      '--since',
      '2000-01-01',
      '--execute',
      '--operator',
      'kim',
    );
    expect(replayed.byKind).toEqual({ jobs: 1, appointments: 1 });
    await eventually(async () => ((await request()).done ? true : undefined), 60_000, 'job materialised');
    expect(await request()).toEqual({ done: true, failed: false });
    expect((await cli('dead-letters', 'show', '--id', jobs.deadLetters[0].id)).recordNow).toMatchObject({
      status: 'Materialized',
    });
    await eventually(
      async () => ((await appointment()) === 'PendingReview' ? true : undefined),
      60_000,
      'PendingReview',
    );
    expect(await events('field_job.created', 'fieldJobId', fieldJobId)).toBe(1);
    const { rows: history } = await suite.pool.query(
      `SELECT from_status, to_status FROM appointment_status_history WHERE appointment_request_id = $1 ORDER BY seq`,
      [appointmentId],
    );
    expect(history.map((h) => `${h.from_status}→${h.to_status}`)).toEqual([
      'null→Submitted',
      'Submitted→Failed',
      'Failed→Validated',
      'Validated→PendingReview',
    ]);
    expect(await depth('jobs')).toBe(0);
    expect(await depth('appointments')).toBe(0);
  });
});
