import { describe, expect, it } from 'vitest';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import { admin, createClientWithKey } from '../support/fixtures.js';
import { testConfig } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { spawnWorkers } from '../support/processes.js';
import { scaled } from '../support/time-scale.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';
import { webhookHarness } from '../support/webhook-harness.js';

// Issue 50: attempts are counted when sent, not when claimed. A dispatcher process SIGKILLed
// after claiming a delivery and before sending it spends none of its attempts: the delivery is
// sent later as its attempt 1. Before the fix the claim counted it, so skipped starts and crashes
// used up the retry schedule (an endpoint could be disabled without being tried that often).
//
// The dispatcher is held between its claim and its POST by a trigger of this test's database that
// waits for an advisory lock the test holds, on the first change to a claimed delivery under the
// same lease (the statement that begins the attempt), then killed there.

const h = webhookHarness({ poolSize: 4, demo: true, receiver: true });

const env = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_TIMEOUT_MS: '1000', // lease = 6 s
  WEBHOOK_POLL_INTERVAL_MS: '100',
  WEBHOOK_RETRY_SCHEDULE: '0.2,0.5,1',
};
const holdKey = 50_050;

const delivery = async (eventId: string) =>
  (
    await h.pool.query('SELECT status, attempt_count, round_attempts FROM webhook_deliveries WHERE event_id = $1', [
      eventId,
    ])
  ).rows[0];

describe('webhook attempts are counted when sent', () => {
  it('a dispatcher SIGKILLed after its claim and before its POST spends no attempt', async () => {
    const config = testConfig(h.db.url);
    const { clientId } = await createClientWithKey(h.pool, h.demo.tenantId, '');
    await admin(h.pool, webhookCreate, ['--client', clientId, '--url', h.receiver.url('/count'), '--events', 'all']);
    await h.pool.query(`
      CREATE FUNCTION test_hold_attempt_start() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_xact_lock(${holdKey}); RETURN NEW; END $$;
      CREATE TRIGGER test_hold_attempt_start BEFORE UPDATE ON webhook_deliveries FOR EACH ROW
        WHEN (OLD.status = 'Delivering' AND NEW.status = 'Delivering' AND OLD.lease_token = NEW.lease_token)
        EXECUTE FUNCTION test_hold_attempt_start();`);
    const holder = await h.pool.connect();
    await holder.query('SELECT pg_advisory_lock($1)', [holdKey]);
    const [eventId] = await raiseFieldJobEvents(h.pool, { tenantId: h.demo.tenantId, clientId }, 1, 'COUNT');

    const first = spawnWorkers(config, 'webhooks', env);
    try {
      await first.running();
      await eventually(
        async () => {
          const { rows } = await h.pool.query(
            `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`,
            [holdKey],
          );
          return rows.length > 0 ? true : undefined;
        },
        scaled(30_000),
        'the dispatcher to claim the delivery and stop before sending it',
      );
      expect(await delivery(eventId!)).toMatchObject({ status: 'Delivering' });
      expect(await first.kill('SIGKILL')).toBeNull();
      // Its statements die with it: none of them completes once the lock is let go (every
      // connection to this database but the test's own).
      await h.pool.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> 'test'`,
      );
    } finally {
      await first.kill('SIGKILL');
      await h.pool.query('DROP TRIGGER test_hold_attempt_start ON webhook_deliveries');
      await holder.query('SELECT pg_advisory_unlock($1)', [holdKey]);
      holder.release();
    }
    expect(h.receiver.received('/count')).toHaveLength(0);
    expect(await delivery(eventId!)).toEqual({ status: 'Delivering', attempt_count: 0, round_attempts: 0 });

    // Another dispatcher takes it once the lease runs out, and sends it as its attempt 1.
    const second = spawnWorkers(config, 'webhooks', env);
    try {
      await second.running();
      await h.receiver.waitFor('/count', 1, () => true, scaled(60_000));
      await eventually(
        async () => ((await delivery(eventId!)).status === 'Succeeded' ? true : undefined),
        scaled(30_000),
        'the delivery Succeeded',
      );
    } finally {
      expect(await second.kill('SIGTERM')).toBe(0);
    }
    expect(h.receiver.received('/count')).toHaveLength(1);
    expect(await delivery(eventId!)).toEqual({ status: 'Succeeded', attempt_count: 1, round_attempts: 1 });
    const { rows } = await h.pool.query(
      'SELECT attempt, outcome FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt',
      [eventId],
    );
    expect(rows).toEqual([{ attempt: 1, outcome: 'Succeeded' }]);
  }, 180_000);
});
