import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/kafka.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';
import { webhookHarness, type Owner } from '../support/webhook-harness.js';

// Issue 50: many tenants whose endpoints hang at once must not delay a tenant whose endpoint
// answers. Before, each tenant's 25 % was a ceiling, so any four such tenants held every slot.
// Now a quarter of the slots is held back for endpoints that answer, and a free slot goes to the
// tenant that used least slot time lately. Every assertion is on states, counts or the order in
// which requests arrived, never on a duration: slow requests are held open by the receiver.

const h = webhookHarness({ poolSize: 6, receiver: true, name: 'test-many-tenants' });

// Hanging paths answer at once from now on, so nothing claimed while the dispatchers stop is held.
// Registered after the harness's afterEach, so it runs first (vitest runs them last registered
// first): it stops the dispatchers itself, releasing all the while.
const hangingPaths: string[] = [];
afterEach(async () => {
  for (const path of hangingPaths.splice(0)) h.receiver.behave(path, () => ({ status: 200 }));
  // Released again while stopping: a request that arrived as its path's answer changed is not left held.
  const releasing = setInterval(() => h.receiver.release(), 100);
  h.receiver.release();
  await h.stopAll();
  clearInterval(releasing);
  // What a test left due is not the next test's: its endpoints are disabled.
  await h.pool.query(
    `UPDATE webhook_endpoints SET status = 'Disabled', disabled_reason = 'test over', disabled_at = now() WHERE status = 'Active'`,
  );
});

// 16 slots: 4 held back for endpoints that answer, so hanging endpoints hold at most 12. A
// tenant's share (25 %) is 4: eight hanging tenants would fill all 16 under a count ceiling alone.
const slots = 16;
const unreserved = 12;
const settings = () =>
  h.settings({
    WEBHOOK_POLL_INTERVAL_MS: '50',
    WEBHOOK_TIMEOUT_MS: '120000', // held requests are answered by the test, not timed out
    WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2',
    WEBHOOK_CONCURRENCY: String(slots),
    WEBHOOK_TENANT_SHARE_PERCENT: '25',
    WEBHOOK_RESERVE_PERCENT: '25',
    WEBHOOK_BREAKER_FAILURES: '1000', // no breaker: the held requests are what is tested
    WEBHOOK_BREAKER_FAILURE_RATE_PERCENT: '0',
  });

const dispatch = () => h.dispatch(settings());

/** `tenants` tenants with 3 endpoints each whose requests are held open; 2 events each (6 deliveries a tenant). */
async function hangingTenants(tenants: number) {
  const paths: string[] = [];
  const owners: Owner[] = [];
  for (let t = 0; t < tenants; t++) {
    const owner = await h.newOwner();
    owners.push(owner);
    for (let e = 0; e < 3; e++) {
      const { path } = await h.newEndpoint(owner);
      h.receiver.behave(path, () => 'hold');
      paths.push(path);
      hangingPaths.push(path);
    }
  }
  for (const owner of owners) await raiseFieldJobEvents(h.pool, owner, 2, 'HANGING');
  const requests = () => paths.reduce((n, p) => n + h.receiver.received(p).length, 0);
  return { paths, owners, requests, held: () => paths.reduce((n, p) => n + h.receiver.heldCount(p), 0) };
}

const attemptsOf = async (owners: Owner[]) =>
  (
    await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_attempts WHERE tenant_id = ANY($1)`, [
      owners.map((o) => o.tenantId),
    ])
  ).rows[0]!.n;

describe('webhooks when many tenants fail at once (issue 50)', () => {
  it("delivers an answering endpoint's event while eight tenants' hanging endpoints hold every slot they may", async () => {
    const d = dispatch();
    // The healthy tenant's endpoint has answered before: it counts as an endpoint that answers.
    const healthy = await h.newOwner();
    const { path: healthyPath } = await h.newEndpoint(healthy);
    await raiseFieldJobEvents(h.pool, healthy, 1, 'BEFORE');
    await h.receiver.waitFor(healthyPath, 1);
    await eventually(async () =>
      (
        await h.pool.query(`SELECT 1 FROM webhook_endpoints WHERE tenant_id = $1 AND last_success_at IS NOT NULL`, [
          healthy.tenantId,
        ])
      ).rowCount
        ? true
        : undefined,
    );

    const hanging = await hangingTenants(8); // 48 deliveries, every request held open
    await eventually(
      () => (hanging.held() === unreserved ? true : undefined),
      30_000,
      'the hanging tenants hold every slot not held back',
    );

    const [eventId] = await raiseFieldJobEvents(h.pool, healthy, 1, 'DURING');
    const hits = await h.receiver.waitFor(healthyPath, 2);
    expect(hits[1]!.headers['webhook-id']).toBe(eventId);
    // It arrived while every hanging request was still open: it waited for none of them.
    expect(hanging.held()).toBe(unreserved);
    expect(hanging.requests()).toBe(unreserved);
    expect(await attemptsOf(hanging.owners)).toBe(0);
    const { rows } = await h.pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = ANY($1) GROUP BY status ORDER BY status`,
      [hanging.owners.map((o) => o.tenantId)],
    );
    expect(rows).toEqual([
      { status: 'Delivering', n: unreserved },
      { status: 'Pending', n: 48 - unreserved },
    ]);
    expect(h.receiver.peakOpen()).toBeLessThanOrEqual(slots);
    expect(d.slotsHeld().peak).toBeLessThanOrEqual(slots);
  });

  it('gives a slot that comes free to a tenant that used little before the oldest due delivery of tenants holding many', async () => {
    // All 48 deliveries due before the dispatcher starts: its first claim sees every tenant, so
    // each of the eight comes to hold a slot (a tenant holding none would be as light as the new one).
    const hanging = await hangingTenants(8);
    dispatch();
    await eventually(() => (hanging.held() === unreserved ? true : undefined), 30_000, 'the slots taken');
    const { rows: holding } = await h.pool.query<{ n: number }>(
      `SELECT count(DISTINCT tenant_id)::int AS n FROM webhook_deliveries WHERE tenant_id = ANY($1) AND status = 'Delivering'`,
      [hanging.owners.map((o) => o.tenantId)],
    );
    expect(holding[0]!.n).toBe(8);

    // A tenant never served, whose endpoint has not answered yet either: it competes for the same
    // unreserved slots as the hanging ones, and its delivery is the newest due.
    const light = await h.newOwner();
    const { path: lightPath } = await h.newEndpoint(light);
    const [lightEvent] = await raiseFieldJobEvents(h.pool, light, 1, 'LIGHT');
    expect(h.receiver.received(lightPath)).toHaveLength(0); // no slot for it yet

    // One hanging request answered 500: its slot comes free (its delivery is due again shortly).
    const sentBefore = new Set(h.receiver.received().map((r) => r.headers['webhook-id']));
    const before = h.receiver.received().length;
    expect(h.receiver.releaseOne(500)).toBe(true);
    await h.receiver.waitFor(lightPath, 1);
    // Up to the light tenant's request, none of the 36 deliveries still waiting was sent: at most
    // the released one again (its retry, if it came due first).
    const upToLight = h.receiver.received().slice(before);
    const lightAt = upToLight.findIndex((r) => r.path === lightPath);
    expect(upToLight[lightAt]!.headers['webhook-id']).toBe(lightEvent);
    for (const r of upToLight.slice(0, lightAt)) expect(sentBefore.has(r.headers['webhook-id'])).toBe(true);
  });

  it('never has more requests open than its slots while many tenants come and go', async () => {
    const d = dispatch();
    const hanging = await hangingTenants(10); // 60 deliveries
    const healthy = await h.newOwner();
    const { path: healthyPath } = await h.newEndpoint(healthy);
    await raiseFieldJobEvents(h.pool, healthy, 20, 'HEALTHY');
    // Answer the held requests in waves (200, so their endpoints come to count as answering and
    // may use the held-back slots too) until every delivery has succeeded.
    await eventually(
      async () => {
        expect(h.receiver.openCount()).toBeLessThanOrEqual(slots);
        h.receiver.release(200);
        const { rows } = await h.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = ANY($1) AND status <> 'Succeeded'`,
          [[...hanging.owners, healthy].map((o) => o.tenantId)],
        );
        return rows[0]!.n === 0 ? true : undefined;
      },
      60_000,
      'every delivery succeeded',
    );
    expect(h.receiver.received(healthyPath)).toHaveLength(20);
    expect(hanging.requests()).toBe(60);
    expect(h.receiver.peakOpen()).toBeLessThanOrEqual(slots);
    expect(d.slotsHeld().peak).toBeLessThanOrEqual(slots);
  });
});
