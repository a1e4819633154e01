import { beforeAll, describe, expect, it } from 'vitest';
import { insertWorkOrders } from '../../src/admin/store.js';
import { jobsWorker } from '../../src/workers/jobs/kind.js';
import { materialsWorker } from '../../src/workers/materials/kind.js';
import { bearer, createDemo, type Demo } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { balanceOf, materialsPath, runUsageLoad, usageLedger } from '../support/materials.js';
import { useGatewaySuite } from '../support/suite.js';
import { startTestWorkers } from '../support/workers.js';
import { scaled } from '../support/time-scale.js';

const suite = useGatewaySuite({
  env: () => ({ RATE_LIMIT_PER_MINUTE: '100000' }),
  workers: [materialsWorker, jobsWorker],
});
const key = () => suite.demo.clients.all!.apiKey;
const wo = (i = 0) => suite.demo.workOrders[i]!;
const { byId, byExternalId } = materialsPath;
const post = (path: string, body: unknown, apiKey = key()) => suite.api.post(path, { body, headers: bearer(apiKey) });
const get = (path: string, apiKey = key()) => suite.api.get(path, { headers: bearer(apiKey) });

type Item = { inventoryItemId: string; sku: string; name: string; unitOfMeasure: string; lowStockThreshold: number };
type Location = { inventoryLocationId: string; externalCode: string };
const items: Record<string, Item> = {};
const locations: Record<string, Location> = {};
let other: Demo;

beforeAll(async () => {
  for (const i of (await get('/api/v1/connect/inventory/items')).body as Item[]) items[i.sku] = i;
  for (const l of (await get('/api/v1/connect/inventory/locations')).body as Location[]) locations[l.externalCode] = l;
  other = await createDemo(suite.pool);
});

const line = (sku: string, quantity: number, unitOfMeasure: string | null = items[sku]!.unitOfMeasure) => ({
  sku,
  quantity,
  unitOfMeasure,
});
const usage = (externalEventId: string, materials: unknown[], extra: Record<string, unknown> = {}) => ({
  externalEventId,
  externalLocationCode: 'VAN-01',
  usedAt: '2025-06-01T09:30:00+02:00',
  materials,
  ...extra,
});

async function balance(sku: string, code: string): Promise<any> {
  const rows = (await get('/api/v1/connect/inventory/balances')).body as Record<string, any>[];
  return rows.find(
    (b) =>
      b.inventoryItemId === items[sku]!.inventoryItemId &&
      b.inventoryLocationId === locations[code]!.inventoryLocationId,
  );
}

const untilApplied = (workOrderId: number, usageId: string) =>
  eventually(
    async () => {
      const list = (await get(byId(workOrderId))).body as Record<string, any>[];
      const found = list.find((u) => u.materialUsageId === usageId);
      return found?.status === 'Applied' ? found : undefined;
    },
    30_000,
    `usage ${usageId} applied`,
  );

/**
 * The documented lag is "normally within a second"; the bound leaves headroom for a loaded test
 * machine (this file's gateway and worker share it with other test files).
 */
async function appliedWithinLag(workOrderId: number, usageId: string) {
  const started = Date.now();
  await untilApplied(workOrderId, usageId);
  expect(Date.now() - started).toBeLessThan(5000);
}

describe('work-order material usage', () => {
  it('records a usage (Pending, visible at once), then books it: Applied and the balance goes down', async () => {
    const before = await balance('CU-PIPE-15', 'VAN-01');
    const res = await post(
      byId(wo(0).workOrderId),
      usage('flow-1', [line('CU-PIPE-15', 2.5), line('TAPE-PTFE-12', 1), line('CU-PIPE-15', 0.25, 'M')]),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      workOrderId: wo(0).workOrderId,
      externalWorkOrderId: wo(0).externalWorkOrderId,
      inventoryLocationId: locations['VAN-01']!.inventoryLocationId,
      usedAt: '2025-06-01T07:30:00.000Z',
      status: 'Pending',
      idempotency: { externalEventId: 'flow-1', wasAlreadyProcessed: false },
    });
    const pipe = items['CU-PIPE-15']!;
    expect(res.body.materials).toEqual([
      { inventoryItemId: pipe.inventoryItemId, sku: pipe.sku, name: pipe.name, quantity: 2.5, unitOfMeasure: 'm' },
      expect.objectContaining({ sku: 'TAPE-PTFE-12', name: 'PTFE sealing tape', quantity: 1, unitOfMeasure: 'roll' }),
      expect.objectContaining({ sku: 'CU-PIPE-15', quantity: 0.25, unitOfMeasure: 'm' }),
    ]);

    // Read-your-writes: the GET right after the 200 shows the usage (Pending until booked).
    const list = await get(byId(wo(0).workOrderId));
    expect(list.status).toBe(200);
    const read = list.body.find((u: any) => u.materialUsageId === res.body.materialUsageId);
    expect(read).toMatchObject({
      externalEventId: 'flow-1',
      workOrderId: wo(0).workOrderId,
      externalWorkOrderId: wo(0).externalWorkOrderId,
      inventoryLocationId: locations['VAN-01']!.inventoryLocationId,
      locationName: 'Service van 1',
      externalLocationCode: 'VAN-01',
      usedAt: '2025-06-01T07:30:00.000Z',
      materials: res.body.materials,
      failureReason: null,
    });
    expect(['Pending', 'Applied']).toContain(read.status);
    expect(Date.parse(read.recordedAt)).toBeGreaterThan(Date.now() - 60_000);

    const applied = await untilApplied(wo(0).workOrderId, res.body.materialUsageId);
    expect(Date.parse(applied.appliedAt)).toBeGreaterThanOrEqual(Date.parse(applied.recordedAt));
    const after = await balance('CU-PIPE-15', 'VAN-01');
    expect(after.quantityOnHand).toBe(before.quantityOnHand - 2.75);
    // The untracked item (trackStock = false) is recorded but moves no stock.
    const { rows } = await suite.pool.query(
      `SELECT i.sku, m.line_no, m.quantity_delta FROM stock_movements m JOIN inventory_items i ON i.id = m.item_id
        WHERE m.material_usage_id = $1 ORDER BY m.line_no`,
      [res.body.materialUsageId],
    );
    expect(rows).toEqual([
      { sku: 'CU-PIPE-15', line_no: 1, quantity_delta: '-2.5000' },
      { sku: 'CU-PIPE-15', line_no: 3, quantity_delta: '-0.2500' },
    ]);
    expect(await balance('TAPE-PTFE-12', 'VAN-01')).toBeUndefined();
  });

  it("takes usages on a created job's work order once the job is materialised (404 until then)", async () => {
    const job = await suite.api.post('/api/v1/connect/jobs', {
      headers: bearer(key()),
      body: {
        externalId: 'JOB-MAT-1',
        title: 'Replace valve',
        jobType: 'REPAIR',
        customer: { name: 'ACME' },
        site: { address: { line1: 'Main 1', city: 'Berlin', countryCode: 'DE' } },
      },
    });
    expect(job.status).toBe(201);
    const body = usage('job-1', [line('VALVE-BALL-12', 1)]);
    const res = await eventually(
      async () => {
        const r = await post(byExternalId('JOB-MAT-1'), body);
        if (r.status === 404) expect(r.body.error.message).toContain('materialised');
        else return r;
      },
      30_000,
      'work order of the job',
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ externalWorkOrderId: 'JOB-MAT-1', status: 'Pending' });
    const list = await get(byId(res.body.workOrderId));
    expect(list.body.map((u: any) => u.externalEventId)).toEqual(['job-1']);
  });

  it('takes the tenant default location when none is given, and a location by id', async () => {
    const byDefault = await post(
      byId(wo(1).workOrderId),
      usage('loc-1', [line('VALVE-BALL-12', 1)], { externalLocationCode: undefined }),
    );
    expect(byDefault.status).toBe(200);
    expect(byDefault.body.inventoryLocationId).toBe(locations['WH-MAIN']!.inventoryLocationId);
    const byLocId = await post(
      byId(wo(1).workOrderId),
      usage('loc-2', [line('VALVE-BALL-12', 1)], {
        externalLocationCode: null,
        inventoryLocationId: locations['VAN-02']!.inventoryLocationId,
      }),
    );
    expect(byLocId.status).toBe(200);
    expect(byLocId.body.inventoryLocationId).toBe(locations['VAN-02']!.inventoryLocationId);
  });

  it('is one operation at both addresses: same answers, and a replay across them', async () => {
    const body = usage('both-1', [line('CABLE-NYM-3X15', 3)]);
    const first = await post(byExternalId(wo(1).externalWorkOrderId), body);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      workOrderId: wo(1).workOrderId,
      externalWorkOrderId: wo(1).externalWorkOrderId,
      status: 'Pending',
      idempotency: { externalEventId: 'both-1', wasAlreadyProcessed: false },
    });
    const again = await post(byId(wo(1).workOrderId), body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      materialUsageId: first.body.materialUsageId,
      idempotency: { externalEventId: 'both-1', wasAlreadyProcessed: true },
    });
    const { status: _s1, idempotency: _i1, ...rest } = again.body;
    const { status: _s0, idempotency: _i0, ...rest0 } = first.body;
    expect(rest).toEqual(rest0);

    // Every outcome is the same at both addresses.
    const cases: [name: string, body: unknown, status: number, code?: string][] = [
      ['new usage', usage('both-2', [line('CABLE-NYM-3X15', 1)]), 200],
      ['invalid body', usage('both-3', []), 400, 'validation_failed'],
      ['unknown SKU', usage('both-4', [line('NOPE', 1, 'pcs')]), 400, 'inventory_reference_invalid'],
      ['other content', usage('both-1', [line('CABLE-NYM-3X15', 4)]), 409, 'idempotency_conflict'],
    ];
    for (const [name, body, expected, code] of cases) {
      const viaId = await post(byId(wo(2).workOrderId), body);
      const viaExt = await post(byExternalId(wo(2).externalWorkOrderId), body);
      expect([viaId.status, viaExt.status], name).toEqual([expected, expected]);
      if (code) expect([viaId.body.error.code, viaExt.body.error.code], name).toEqual([code, code]);
      else {
        expect(viaId.body.idempotency.wasAlreadyProcessed).toBe(false);
        // The status may have moved on (Pending → Applied) between the two calls.
        expect({ ...viaExt.body, status: 'any' }).toEqual({
          ...viaId.body,
          status: 'any',
          idempotency: { externalEventId: 'both-2', wasAlreadyProcessed: true },
        });
      }
    }
  });

  it('answers 404 for unknown work orders and those of another tenant, at every address', async () => {
    const foreign = other.workOrders[0]!;
    const paths = [
      byId(2_000_000_000),
      byId(foreign.workOrderId),
      byExternalId('WO-DOES-NOT-EXIST'),
      byExternalId(foreign.externalWorkOrderId),
    ];
    for (const path of paths) {
      const res = await post(path, usage(`nf-${path}`, [line('CU-PIPE-15', 1)]));
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('resource_not_found');
      expect(res.body.error.message).toContain('materialised');
    }
    for (const id of [2_000_000_000, foreign.workOrderId]) {
      const res = await get(byId(id));
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('resource_not_found');
    }
    // The other tenant's own key sees its work order, with no usage of ours.
    const own = await get(byId(foreign.workOrderId), other.clients['connect.workorders.materials.read']!.apiKey);
    expect(own.status).toBe(200);
    expect(own.body).toEqual([]);
    const { rows } = await suite.pool.query(
      `SELECT count(*)::int AS n FROM material_usages WHERE external_event_id LIKE 'nf-%'`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('answers 400 to invalid path ids and bodies, with field errors, and records nothing', async () => {
    for (const id of ['abc', '0', '-1', '01', '2147483648', '99999999999', '1.5']) {
      const res = await get(byId(id));
      expect(res.status, id).toBe(400);
      expect(res.body.error.fieldErrors).toHaveProperty('workOrderId');
      expect((await post(byId(id), usage('p-1', [line('CU-PIPE-15', 1)]))).status, id).toBe(400);
    }
    expect((await post(byExternalId('x'.repeat(101)), usage('p-2', [line('CU-PIPE-15', 1)]))).status).toBe(400);

    const soon = new Date(Date.now() + 60_000).toISOString();
    const late = new Date(Date.now() + 10 * 60_000).toISOString();
    const bodies: [body: unknown, fields: string[]][] = [
      [{}, ['externalEventId', 'usedAt', 'materials']],
      [{ ...usage('b-1', [line('CU-PIPE-15', 1)]), extra: 1 }, ['extra']],
      [usage('', [line('CU-PIPE-15', 1)]), ['externalEventId']],
      [usage('x'.repeat(201), [line('CU-PIPE-15', 1)]), ['externalEventId']],
      [usage('b-2', []), ['materials']],
      [
        usage(
          'b-3',
          Array.from({ length: 101 }, () => line('CU-PIPE-15', 1)),
        ),
        ['materials'],
      ],
      [usage('b-4', [line('CU-PIPE-15', 0)]), ['materials[0].quantity']],
      [usage('b-5', [line('CU-PIPE-15', -1)]), ['materials[0].quantity']],
      [usage('b-6', [line('CU-PIPE-15', 1_000_000.5)]), ['materials[0].quantity']],
      [usage('b-7', [line('CU-PIPE-15', 1.23456)]), ['materials[0].quantity']],
      [usage('b-8', [{ quantity: 1, unitOfMeasure: 'm' }]), ['materials[0].inventoryItemId']],
      [
        usage('b-9', [{ ...line('CU-PIPE-15', 1), inventoryItemId: items['CU-PIPE-15']!.inventoryItemId }]),
        ['materials[0].inventoryItemId'],
      ],
      [usage('b-10', [{ sku: 'CU-PIPE-15', quantity: 1 }]), ['materials[0].unitOfMeasure']],
      [usage('b-11', [line('CU-PIPE-15', 1)], { usedAt: '2025-06-01T09:30:00' }), ['usedAt']],
      [usage('b-12', [line('CU-PIPE-15', 1)], { usedAt: late }), ['usedAt']],
      [
        usage('b-13', [line('CU-PIPE-15', 1)], { inventoryLocationId: locations['VAN-01']!.inventoryLocationId }),
        ['externalLocationCode'],
      ],
      [
        usage('b-14', [line('CU-PIPE-15', 1)], { inventoryLocationId: 'not-a-uuid', externalLocationCode: null }),
        ['inventoryLocationId'],
      ],
    ];
    for (const [body, fields] of bodies) {
      const res = await post(byId(wo(0).workOrderId), body);
      expect(res.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(Object.keys(res.body.error.fieldErrors).sort(), JSON.stringify(body).slice(0, 200)).toEqual(
        [...fields].sort(),
      );
    }
    // A few minutes of clock skew is fine.
    expect((await post(byId(wo(0).workOrderId), usage('b-ok', [line('CU-PIPE-15', 1)], { usedAt: soon }))).status).toBe(
      200,
    );

    const refs: [body: unknown, fields: string[]][] = [
      [usage('r-1', [line('NO-SUCH-SKU', 1, 'pcs')]), ['materials[0].sku']],
      [
        usage('r-2', [{ inventoryItemId: '00000000-0000-4000-8000-000000000000', quantity: 1, unitOfMeasure: 'pcs' }]),
        ['materials[0].inventoryItemId'],
      ],
      [usage('r-3', [line('CU-PIPE-15', 1)], { externalLocationCode: 'NO-SUCH-CODE' }), ['externalLocationCode']],
      [
        usage('r-4', [line('CU-PIPE-15', 1)], {
          externalLocationCode: null,
          inventoryLocationId: '00000000-0000-4000-8000-000000000000',
        }),
        ['inventoryLocationId'],
      ],
      [
        usage('r-5', [line('CU-PIPE-15', 1, 'pcs'), line('VALVE-BALL-12', 1, 'PCS'), line('FILTER-F7-592', 1, 'box')]),
        ['materials[0].unitOfMeasure', 'materials[2].unitOfMeasure'],
      ],
      [usage('r-6', [line('CU-PIPE-15', 1, null)]), ['materials[0].unitOfMeasure']],
      // Another tenant's item and location do not resolve either.
      [
        usage('r-7', [{ inventoryItemId: await otherItemId(), quantity: 1, unitOfMeasure: 'm' }], {
          externalLocationCode: null,
          inventoryLocationId: await otherLocationId(),
        }),
        ['materials[0].inventoryItemId', 'inventoryLocationId'],
      ],
    ];
    for (const [body, fields] of refs) {
      const res = await post(byId(wo(0).workOrderId), body);
      expect(res.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect(res.body.error.code).toBe('inventory_reference_invalid');
      expect(Object.keys(res.body.error.fieldErrors).sort()).toEqual([...fields].sort());
    }
    const { rows } = await suite.pool.query(
      `SELECT external_event_id FROM material_usages WHERE external_event_id ~ '^(b|r|p)-'`,
    );
    expect(rows.map((r) => r.external_event_id)).toEqual(['b-ok']);
  });

  it('replays the same event with wasAlreadyProcessed and no second movement; other content is a 409', async () => {
    const before = await balance('BREAKER-B16', 'VAN-02');
    const body = usage('idem-1', [line('BREAKER-B16', 2)], { externalLocationCode: 'VAN-02' });
    const first = await post(byId(wo(2).workOrderId), body);
    expect(first.status).toBe(200);
    await untilApplied(wo(2).workOrderId, first.body.materialUsageId);
    // Same content, written differently: by item id, by location id, another offset for the same instant.
    const same = usage(
      'idem-1',
      [{ inventoryItemId: items['BREAKER-B16']!.inventoryItemId, quantity: 2.0, unitOfMeasure: 'PCS' }],
      {
        externalLocationCode: undefined,
        inventoryLocationId: locations['VAN-02']!.inventoryLocationId,
        usedAt: '2025-06-01T07:30:00Z',
      },
    );
    const replay = await post(byExternalId(wo(2).externalWorkOrderId), same);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({
      materialUsageId: first.body.materialUsageId,
      status: 'Applied',
      idempotency: { externalEventId: 'idem-1', wasAlreadyProcessed: true },
    });
    for (const changed of [
      usage('idem-1', [line('BREAKER-B16', 3)], { externalLocationCode: 'VAN-02' }),
      usage('idem-1', [line('BREAKER-B16', 2)], { externalLocationCode: 'WH-MAIN' }),
      usage('idem-1', [line('BREAKER-B16', 2)], {
        externalLocationCode: 'VAN-02',
        usedAt: '2025-06-01T09:31:00+02:00',
      }),
    ]) {
      const res = await post(byId(wo(2).workOrderId), changed);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('idempotency_conflict');
      expect(res.body.error.details).toMatchObject({ materialUsageId: first.body.materialUsageId });
    }
    // The same event id on another work order is other content too.
    expect((await post(byId(wo(0).workOrderId), body)).status).toBe(409);

    await new Promise((r) => setTimeout(r, 500)); // a second booking would show by now
    expect((await balance('BREAKER-B16', 'VAN-02')).quantityOnHand).toBe(before.quantityOnHand - 2);
    const { rows } = await suite.pool.query(
      `SELECT count(*)::int AS n FROM stock_movements WHERE material_usage_id = $1`,
      [first.body.materialUsageId],
    );
    expect(rows[0].n).toBe(1);
    const list = (await get(byId(wo(2).workOrderId))).body.filter((u: any) => u.externalEventId === 'idem-1');
    expect(list).toHaveLength(1);
  });

  it('moves balances to low and negative, creates missing balance rows, and the balances endpoint shows it', async () => {
    // Main warehouse: copper pipe 250 m, low-stock threshold 20.
    const start = await balance('CU-PIPE-15', 'WH-MAIN');
    expect(start).toMatchObject({ quantityOnHand: 250, isLowStock: false, isNegative: false });
    const a = await post(
      byId(wo(0).workOrderId),
      usage('bal-1', [line('CU-PIPE-15', 229.5)], { externalLocationCode: 'WH-MAIN' }),
    );
    await appliedWithinLag(wo(0).workOrderId, a.body.materialUsageId);
    expect(await balance('CU-PIPE-15', 'WH-MAIN')).toMatchObject({
      quantityOnHand: 20.5,
      isLowStock: false,
      isNegative: false,
    });
    const b = await post(
      byId(wo(0).workOrderId),
      usage('bal-2', [line('CU-PIPE-15', 0.5)], { externalLocationCode: 'WH-MAIN' }),
    );
    await appliedWithinLag(wo(0).workOrderId, b.body.materialUsageId);
    expect(await balance('CU-PIPE-15', 'WH-MAIN')).toMatchObject({
      quantityOnHand: 20,
      isLowStock: true,
      isNegative: false,
    });
    const c = await post(
      byId(wo(0).workOrderId),
      usage('bal-3', [line('CU-PIPE-15', 20.0001)], { externalLocationCode: 'WH-MAIN' }),
    );
    await appliedWithinLag(wo(0).workOrderId, c.body.materialUsageId);
    expect(await balance('CU-PIPE-15', 'WH-MAIN')).toMatchObject({
      quantityOnHand: -0.0001,
      isLowStock: true,
      isNegative: true,
    });

    // No balance row yet for filters in the van: the usage creates it, negative.
    expect(await balance('FILTER-F7-592', 'VAN-01')).toBeUndefined();
    const d = await post(byId(wo(0).workOrderId), usage('bal-4', [line('FILTER-F7-592', 3)]));
    await appliedWithinLag(wo(0).workOrderId, d.body.materialUsageId);
    expect(await balance('FILTER-F7-592', 'VAN-01')).toMatchObject({
      quantityOnHand: -3,
      isNegative: true,
      isLowStock: true,
      externalLocationCode: 'VAN-01',
      sku: 'FILTER-F7-592',
    });
  });

  it('marks a usage Failed when its message is dead-lettered after retries, and books nothing', async () => {
    // A balance at the bottom of numeric(18,4): booking 1 more overflows, on every attempt.
    const [item, location] = [items['BREAKER-B16']!, locations['TRANSIT']!];
    await suite.pool.query(
      `INSERT INTO inventory_balances (tenant_id, item_id, location_id, quantity_on_hand) VALUES ($1, $2, $3, $4)`,
      [suite.demo.tenantId, item.inventoryItemId, location.inventoryLocationId, '-99999999999999.5'],
    );
    const body = usage('dlq-1', [line('BREAKER-B16', 1)], { externalLocationCode: 'TRANSIT' });
    const res = await post(byId(wo(1).workOrderId), body);
    expect(res.status).toBe(200);
    const failed = await eventually(
      async () =>
        ((await get(byId(wo(1).workOrderId))).body as any[]).find(
          (u) => u.materialUsageId === res.body.materialUsageId && u.status === 'Failed',
        ),
      30_000,
      'usage failed',
    );
    expect(failed.failureReason).toMatch(/overflow/);
    expect(failed.appliedAt).toBeNull();
    expect(await balanceOf(suite.pool, item.inventoryItemId, location.inventoryLocationId)).toBe(-99999999999999.5);
    const { rows } = await suite.pool.query(
      'SELECT count(*)::int AS n FROM stock_movements WHERE material_usage_id = $1',
      [res.body.materialUsageId],
    );
    expect(rows[0].n).toBe(0);
    const again = await post(byId(wo(1).workOrderId), body);
    expect(again.body).toMatchObject({ status: 'Failed', idempotency: { wasAlreadyProcessed: true } });
  });

  it(
    'keeps the balance exact under 1,000 concurrent usages from 20 clients, replays included',
    async () => {
      // A second consumer of the same group in its own Kafka client and pool: two workers book
      // usages of the same balance row at once.
      const second = await startTestWorkers(suite.config, [materialsWorker]);
      try {
        // More work orders (keys) than partitions, so both consumers get a share of the usages.
        const more = await insertWorkOrders(
          suite.pool,
          suite.demo.tenantId,
          Array.from({ length: 9 }, (_, i) => ({ externalWorkOrderId: `WO-CONC-${i}`, title: 'Concurrency' })),
        );
        const item = items['CABLE-NYM-3X15']!;
        const location = locations['WH-MAIN']!;
        const start = (await balanceOf(suite.pool, item.inventoryItemId, location.inventoryLocationId))!;
        const load = await runUsageLoad({
          api: suite.api,
          pool: suite.pool,
          tenantId: suite.demo.tenantId,
          workOrders: [...suite.demo.workOrders, ...more],
          item,
          locationCode: 'WH-MAIN',
          prefix: 'conc',
        });
        expect(load.responses).toHaveLength(1000);
        expect(load.responses.filter((r) => r.status !== 200)).toEqual([]);
        // Exactly one first answer per event id; every other answer is a replay of the same usage.
        const firsts = load.responses.filter((r) => r.wasAlreadyProcessed === false);
        expect(firsts).toHaveLength(800);
        expect(new Set(firsts.map((r) => r.eventId)).size).toBe(800);
        const usageOf = new Map(firsts.map((r) => [r.eventId, r.usageId]));
        for (const r of load.responses) expect(r.usageId).toBe(usageOf.get(r.eventId));

        const ledger = await eventually(
          async () => {
            const rows = await usageLedger(suite.pool, suite.demo.tenantId, 'conc');
            return rows.length === 800 && rows.every((r) => r.status === 'Applied') ? rows : undefined;
          },
          60_000,
          'all 800 usages applied',
        );
        expect(ledger.filter((r) => r.movements !== 1)).toEqual([]);
        const expected = start - load.expectedDecrease;
        expect(await balanceOf(suite.pool, item.inventoryItemId, location.inventoryLocationId)).toBe(expected);
        const shown = await balance('CABLE-NYM-3X15', 'WH-MAIN');
        expect(shown).toMatchObject({ quantityOnHand: expected, isNegative: expected < 0, isLowStock: false });
      } finally {
        await second.stop();
      }
    },
    scaled(180_000),
  );
});

async function otherItemId(): Promise<string> {
  const res = await get('/api/v1/connect/inventory/items', other.clients.all!.apiKey);
  return res.body.find((i: Item) => i.sku === 'CU-PIPE-15').inventoryItemId;
}

async function otherLocationId(): Promise<string> {
  const res = await get('/api/v1/connect/inventory/locations', other.clients.all!.apiKey);
  return res.body.find((l: Location) => l.externalCode === 'VAN-01').inventoryLocationId;
}
