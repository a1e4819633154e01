import { describe, expect, it } from 'vitest';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { bearer, createClientWithKey, insertImportJob } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';

// The draft's computation budget grows with the machine's slowness, as deadlines do: a 2,000-target
// draft takes seconds on an idle machine and ran past the default 30 s at load 28.
const suite = useGatewaySuite({
  workers: [inboundWorker, inboundExpressWorker],
  env: () => ({ ROUTE_SUGGESTION_BUDGET_MS: String(Math.min(scaled(30_000), 600_000)) }),
});
const key = () => suite.demo.clients.all!.apiKey;
const depot = { latitude: 52.5, longitude: 13.4 };
const plan = {
  date: '2026-11-23',
  timeZone: 'Europe/Berlin',
  depot,
  vehicles: 1,
  shift: { start: '07:00', end: '19:00' },
};

async function importTargets(targets: unknown[]): Promise<number> {
  const res = await suite.api.post('/api/v1/inbound/targets/batch', {
    headers: bearer(key()),
    body: { sourceSystem: 'routes', targets },
  });
  expect(res.status).toBe(200);
  const id = res.body.importJobId as number;
  await eventually(async () => {
    const job = await suite.api.get(`/api/v1/import-jobs/${id}`, { headers: bearer(key()) });
    return ['Completed', 'CompletedWithErrors'].includes(job.body.status) ? true : undefined;
  });
  return id;
}

const suggest = (id: number, body: unknown, apiKey = key()) =>
  suite.api.post(`/api/v1/import-jobs/${id}/route-suggestion`, { headers: bearer(apiKey), body });

describe('route suggestion drafts', () => {
  it('routes points on a circle around the depot as the circle, and stores the draft', async () => {
    const n = 12;
    const targets = Array.from({ length: n }, (_, i) => ({
      externalId: `c${i}`,
      name: `Circle ${i}`,
      coordinates: {
        latitude: depot.latitude + 0.05 * Math.cos((2 * Math.PI * i) / n),
        longitude:
          depot.longitude + (0.05 / Math.cos((depot.latitude * Math.PI) / 180)) * Math.sin((2 * Math.PI * i) / n),
      },
      serviceDurationMinutes: 5,
    }));
    const id = await importTargets(targets);
    const res = await suggest(id, { ...plan, name: 'Circle' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      importJobId: id,
      status: 'Draft',
      name: 'Circle',
      summary: { targets: n, placed: n, unplaced: 0 },
    });
    const order = res.body.routes[0].stops.map((s: { externalId: string }) => Number(s.externalId.slice(1)));
    const steps = order.slice(1).map((v: number, i: number) => (v - order[i] + n) % n);
    expect(steps.every((s: number) => s === 1) || steps.every((s: number) => s === n - 1)).toBe(true);
    const stored = await suite.api.get(`/api/v1/route-suggestions/${res.body.id}`, { headers: bearer(key()) });
    expect(stored.status).toBe(200);
    expect(stored.body).toEqual(res.body);
  });

  it('stores the document it answers, and answers it in the JSON media type Accept asks for', async () => {
    const id = await importTargets(makeTargets(30, 'same'));
    const res = await suite.api.post(`/api/v1/import-jobs/${id}/route-suggestion`, {
      headers: { ...bearer(key()), accept: 'text/json' },
      body: { ...plan, vehicles: 2, name: 'Same' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/json; charset=utf-8');
    const { rows } = await suite.pool.query('SELECT result::text AS result FROM route_suggestions WHERE id = $1', [
      res.body.id,
    ]);
    const { routes, unplaced, totalDistanceKm, totalDurationMinutes, summary } = res.body;
    expect(JSON.parse(rows[0].result)).toEqual({ routes, unplaced, totalDistanceKm, totalDurationMinutes, summary });
    // The members in the order one JSON.stringify of the whole draft writes them.
    expect(res.text).toBe(JSON.stringify(res.body));
    expect(Object.keys(res.body)).toEqual([
      'id',
      'importJobId',
      'name',
      'status',
      'createdAt',
      'date',
      'timeZone',
      'vehicles',
      'averageSpeedKmh',
      'routes',
      'unplaced',
      'totalDistanceKm',
      'totalDurationMinutes',
      'summary',
    ]);
  });

  it('honours time windows and reports targets it cannot place', async () => {
    const targets = [
      {
        externalId: 'morning',
        name: 'M',
        coordinates: { latitude: 52.52, longitude: 13.41 },
        timeWindows: [{ start: '2026-11-23T08:00:00+01:00', end: '2026-11-23T09:00:00+01:00' }],
      },
      {
        externalId: 'tomorrow',
        name: 'T',
        coordinates: { latitude: 52.52, longitude: 13.42 },
        timeWindows: [{ start: '2026-11-24T08:00:00+01:00', end: '2026-11-24T09:00:00+01:00' }],
      },
      { externalId: 'nowhere', name: 'N', address: { line1: 'Unknown 1', city: 'Berlin', countryCode: 'DE' } },
    ];
    const id = await importTargets(targets);
    const res = await suggest(id, plan);
    expect(res.status).toBe(200);
    const stop = res.body.routes[0].stops.find((s: { externalId: string }) => s.externalId === 'morning');
    expect(stop.arrival >= '08:00' && stop.departure <= '09:00').toBe(true);
    expect(res.body.unplaced).toEqual(
      expect.arrayContaining([
        { externalId: 'tomorrow', reason: 'OutsideTimeWindows' },
        { externalId: 'nowhere', reason: 'NoCoordinates' },
      ]),
    );
  });

  it('is deterministic for the same input', async () => {
    const id = await importTargets(makeTargets(60, 'det'));
    const a = await suggest(id, { ...plan, vehicles: 3 });
    const b = await suggest(id, { ...plan, vehicles: 3 });
    expect(b.body.routes).toEqual(a.body.routes);
    expect(b.body.id).not.toBe(a.body.id);
  });

  it('answers 404, 409 and 422 as documented', async () => {
    const id = await importTargets(makeTargets(2, 'iso'));
    const other = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all');
    expect((await suggest(id, plan, other.apiKey)).status).toBe(404);
    const pending = await insertImportJob(suite.pool, {
      tenantId: suite.demo.tenantId,
      clientId: suite.demo.clients.all!.clientId,
    });
    const notFinished = await suggest(pending, plan);
    expect(notFinished.status).toBe(409);
    expect(notFinished.body.error.code).toBe('import_job_not_finished');
    const noCoords = await importTargets([
      { externalId: 'x', name: 'X', address: { line1: 'A 1', city: 'Berlin', countryCode: 'DE' } },
    ]);
    const none = await suggest(noCoords, plan);
    expect(none.status).toBe(422);
    expect(none.body.error.code).toBe('no_routable_targets');
    const bad = await suggest(id, { ...plan, timeZone: 'Mars/Olympus', shift: { start: '19:00', end: '07:00' } });
    expect(bad.status).toBe(400);
    const reversed = await suggest(id, { ...plan, shift: { start: '19:00', end: '07:00' } });
    expect(reversed.status).toBe(400);
    expect(Object.keys(reversed.body.error.fieldErrors)).toEqual(['shift.end']);
  });

  it(
    'computes a 2,000-target draft off the request thread',
    async () => {
      const id = await importTargets(makeTargets(2000, 'big'));
      let draftDone = false;
      const draft = suggest(id, { ...plan, vehicles: 20 }).then((r) => ((draftDone = true), r));
      await new Promise((r) => setTimeout(r, 100));
      const live = await suite.api.get('/livez');
      expect(live.status).toBe(200);
      expect(draftDone).toBe(false); // /livez was answered while the draft was still computing
      const res = await draft;
      expect(res.status).toBe(200);
      expect(res.body.summary.targets).toBe(2000);
    },
    scaled(120_000),
  );
});
