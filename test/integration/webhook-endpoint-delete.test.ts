import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createTenantPool, type TenantPool } from '../../src/shared/db/tenant-scope.js';
import { createEndpoint, deleteEndpoint } from '../../src/shared/webhooks/endpoints.js';
import {
  insertAttempts,
  lockEndpointsHealth,
  settleDeliveries,
  updateEndpointsHealth,
} from '../../src/workers/webhooks/sql.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createClientWithKey, createDemo, type Demo } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';

// A client deletes an endpoint while a dispatcher is recording an attempt to it (the POST was
// answered; the dispatcher's transaction has inserted the attempt and marked the delivery, and
// has yet to mark the endpoint). The delete must neither fail on the attempt committed under it
// (a foreign-key error), nor deadlock with the recorder (it locked the endpoint before the
// deliveries, the recorder the other way round: both seen as a 500 in CI runs), nor leave it.
// The delete runs as the gateway runs it: in a transaction scoped to the client's tenant.

let db: TestDatabase;
let pool: Pool;
let scoped: TenantPool;
let demo: Demo;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 4, 'test');
  scoped = createTenantPool(db.url, 1, 'test-scoped');
  demo = await createDemo(pool);
});
afterAll(async () => {
  await Promise.all([pool?.end(), scoped?.end()]);
  await db?.drop();
});

describe('deleting a webhook endpoint', () => {
  it('while an attempt to it is being recorded: deleted with its deliveries and attempts', async () => {
    const { clientId } = await createClientWithKey(pool, demo.tenantId, '');
    const tenantId = demo.tenantId;
    const endpoint = await createEndpoint(pool, {
      tenantId,
      clientId,
      url: 'https://example.com/hook',
      eventTypes: '*',
    });
    const remove = () =>
      scoped.transaction(tenantId, (tx) => deleteEndpoint(tx, { endpointId: endpoint.endpointId, clientId }));
    const [eventId] = await raiseFieldJobEvents(pool, { tenantId, clientId }, 1, 'DELETE');
    const { rows } = await pool.query('SELECT id FROM webhook_deliveries WHERE endpoint_id = $1', [
      endpoint.endpointId,
    ]);
    expect(rows).toHaveLength(1);

    const leaseToken = '00000000-0000-4000-8000-000000000001';
    await pool.query(`UPDATE webhook_deliveries SET status = 'Delivering', lease_token = $2 WHERE id = $1`, [
      rows[0].id,
      leaseToken,
    ]);

    const recorder = await pool.connect();
    try {
      // What the dispatcher's recordOutcomes() does, in its order, stopped before the endpoint's update.
      await recorder.query('BEGIN');
      await recorder.query(insertAttempts, [
        [rows[0].id],
        [eventId],
        [endpoint.endpointId],
        [1],
        ['Succeeded'],
        [200],
        [12],
        [null],
        [null],
        [new Date().toISOString()],
      ]);
      expect(
        (await recorder.query(settleDeliveries, [[rows[0].id], [leaseToken], [true], [null], [null]])).rowCount,
      ).toBe(1);
      const deleting = remove();
      // The delete waits for the recorder (it holds the delivery through its attempt's key).
      await eventually(
        async () =>
          (
            await pool.query(
              `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
            )
          ).rowCount! > 0 || undefined,
        30_000,
        'the delete waiting for the recorder',
      );
      expect((await recorder.query(lockEndpointsHealth, [[endpoint.endpointId]])).rowCount).toBe(1);
      await recorder.query(updateEndpointsHealth, [
        [endpoint.endpointId],
        [0],
        ['0'],
        [1],
        [0],
        [1],
        [-1],
        [true],
        [false],
        [false],
      ]);
      await recorder.query('COMMIT');
      expect(await deleting).toBe(true);
    } finally {
      await recorder.query('ROLLBACK').catch(() => undefined);
      recorder.release();
    }
    const left = await pool.query(
      `SELECT (SELECT count(*) FROM webhook_attempts WHERE endpoint_id = $1)::int AS attempts,
              (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1)::int AS deliveries,
              (SELECT count(*) FROM webhook_endpoints WHERE id = $1)::int AS endpoints`,
      [endpoint.endpointId],
    );
    expect(left.rows[0]).toEqual({ attempts: 0, deliveries: 0, endpoints: 0 });
    expect(await remove()).toBe(false);
  });
});
