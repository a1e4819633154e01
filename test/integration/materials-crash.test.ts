import { describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { balanceOf, runUsageLoad, usageLedger } from '../support/materials.js';
import { spawnWorkers } from '../support/processes.js';
import { useGatewaySuite } from '../support/suite.js';
import { scaled } from '../support/time-scale.js';

// The concurrency load of the e2e test (1,000 usages of one item at one location from 20
// clients, 200 of them replays) while the materials worker process is SIGKILLed and restarted
// several times: afterwards every usage is Applied with exactly one stock movement and the
// balance is exactly the start minus the distinct usages.
const suite = useGatewaySuite({ env: () => ({ RATE_LIMIT_PER_MINUTE: '100000' }) });
const distinct = 800;

const applied = async () =>
  (
    await suite.pool.query(
      `SELECT count(*) FILTER (WHERE status = 'Applied')::int AS n FROM material_usages WHERE external_event_id LIKE 'crash-%'`,
    )
  ).rows[0].n as number;

describe('materials worker crash safety', () => {
  it(
    'books every usage exactly once despite SIGKILLs during the run',
    async () => {
      const headers = bearer(suite.demo.clients.all!.apiKey);
      const items = (await suite.api.get('/api/v1/connect/inventory/items', { headers })).body as any[];
      const locations = (await suite.api.get('/api/v1/connect/inventory/locations', { headers })).body as any[];
      const item = items.find((i) => i.sku === 'VALVE-BALL-12');
      const location = locations.find((l) => l.externalCode === 'WH-MAIN');
      const start = (await balanceOf(suite.pool, item.inventoryItemId, location.inventoryLocationId))!;

      const env = { KAFKA_SESSION_TIMEOUT_MS: '6000' };
      let worker = spawnWorkers(suite.config, 'materials', env);
      await worker.running();
      const loading = runUsageLoad({
        api: suite.api,
        pool: suite.pool,
        tenantId: suite.demo.tenantId,
        workOrders: suite.demo.workOrders,
        item,
        locationCode: 'WH-MAIN',
        prefix: 'crash',
        distinct,
        // Twenty clients beside a worker being killed: on a busy machine a usage may meet the
        // tenant's full edge share (429) or a busy database (503); a client retries those.
        retryRefusedForMs: scaled(120_000),
      });

      const killedAt: number[] = [];
      for (let kill = 0; kill < 3; kill++) {
        const before = await applied();
        // Let it book some usages, then kill it in the middle of its work.
        await eventually(async () => ((await applied()) > before ? true : undefined), 60_000, 'progress');
        await new Promise((r) => setTimeout(r, 50 + kill * 100));
        await worker.kill('SIGKILL');
        killedAt.push(await applied());
        worker = spawnWorkers(suite.config, 'materials', env);
        await worker.running();
      }
      expect(killedAt.some((n) => n > 0 && n < distinct)).toBe(true);

      const load = await loading;
      expect(load.responses.filter((r) => r.status !== 200)).toEqual([]);
      expect(load.responses.filter((r) => r.wasAlreadyProcessed === false)).toHaveLength(distinct);
      const ledger = await eventually(
        async () => {
          const rows = await usageLedger(suite.pool, suite.demo.tenantId, 'crash');
          return rows.length === distinct && rows.every((r) => r.status === 'Applied') ? rows : undefined;
        },
        120_000,
        'all usages applied',
      );
      await worker.kill('SIGTERM');

      expect(ledger.filter((r) => r.movements !== 1)).toEqual([]);
      expect(await balanceOf(suite.pool, item.inventoryItemId, location.inventoryLocationId)).toBe(
        start - load.expectedDecrease,
      );
      const { rows } = await suite.pool.query(
        `SELECT count(*)::int AS movements, coalesce(sum(quantity_delta), 0)::float8 AS total
         FROM stock_movements WHERE item_id = $1 AND location_id = $2`,
        [item.inventoryItemId, location.inventoryLocationId],
      );
      expect(rows[0]).toEqual({ movements: distinct, total: -load.expectedDecrease });
    },
    scaled(300_000),
  );
});
