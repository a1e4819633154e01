import { describe, expect, it } from 'vitest';
import { demo } from '../../src/admin/commands/demo.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { admin, bearer, createClientWithKey, type Demo } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// Issue 24, finding 8: in-flight slots are shared per tenant as well as per client. Four route
// suggestion slots, a client and a tenant may hold half: two clients of one tenant together hold
// at most two, and a client of another tenant still gets one.
const suite = useGatewaySuite({
  workers: [inboundWorker, inboundExpressWorker],
  env: () => ({
    ROUTE_SUGGESTION_BUDGET_MS: '60000',
    ROUTE_SUGGESTION_MAX_IN_FLIGHT: '4',
    IN_FLIGHT_CLIENT_SHARE_PERCENT: '50',
    IN_FLIGHT_TENANT_SHARE_PERCENT: '50',
  }),
});

// A draft that computes for seconds (route-suggestion-budget.test.ts), so its slot stays held.
const plan = {
  date: '2026-11-23',
  timeZone: 'Europe/Berlin',
  depot: { latitude: 52.5, longitude: 13.4 },
  vehicles: 50,
  shift: { start: '07:00', end: '19:00' },
};
const path = (id: number) => `/api/v1/import-jobs/${id}/route-suggestion`;

async function bigJob(apiKey: string): Promise<number> {
  const targets = makeTargets(4000, 'big').map((t) => ({ ...t, timeWindows: [] }));
  const res = await suite.api.post('/api/v1/inbound/targets/batch', {
    headers: bearer(apiKey),
    body: { sourceSystem: 'tenant-share', targets },
  });
  expect(res.status).toBe(200);
  const id = res.body.importJobId as number;
  await eventually(async () => {
    const job = await suite.api.get(`/api/v1/import-jobs/${id}`, { headers: bearer(apiKey) });
    return job.body.status === 'Completed' ? true : undefined;
  }, 120_000);
  return id;
}

const draft = (apiKey: string, id: number, signal?: AbortSignal) =>
  fetch(new URL(path(id), suite.gateway.url), {
    method: 'POST',
    headers: { ...bearer(apiKey), 'content-type': 'application/json' },
    body: JSON.stringify(plan),
    signal,
  }).then(
    async (res) => ({ status: res.status, code: ((await res.json()) as { error?: { code: string } }).error?.code }),
    (err: Error) => ({ status: 0, code: err.name }),
  );

describe('in-flight slots per tenant', () => {
  it('holds two clients of one tenant to the tenant share, and leaves another tenant a slot', async () => {
    const first = suite.demo.clients.all!.apiKey;
    const sibling = (await createClientWithKey(suite.pool, suite.demo.tenantId, 'all')).apiKey;
    const stranger = ((await admin(suite.pool, demo, ['--name', 'other tenant'])) as Demo).clients.all!.apiKey;
    const id = await bigJob(first);

    // The first client takes its share (two drafts); once a third of its own is refused, its
    // sibling asks, then a client of another tenant; the first still holds both afterwards, or
    // the round is tried again (a draft may end early on a loaded machine, or lose its slot to
    // the third).
    const round = async () => {
      const leaving = new AbortController();
      const held = [draft(first, id, leaving.signal), draft(first, id, leaving.signal)];
      // A third draft that came before the held ones took their slots gets one itself, and a held
      // one is refused or ends; from then on nothing holds the share: this round proves nothing.
      let heldEnded = false;
      for (const h of held) void h.then(() => (heldEnded = true));
      try {
        const seen: string[] = []; // what the third draft got meanwhile, named if it never is refused
        const refused = await eventually(
          async () => {
            if (heldEnded) return false;
            const third = await draft(first, id);
            seen.push(`${third.status} ${third.code ?? ''}`.trim());
            return third.status === 503 ? true : undefined;
          },
          60_000,
          () => `a third draft of the first client refused (got: ${[...new Set(seen)].join(', ')})`,
        );
        if (!refused) return null;
        const siblings = await draft(sibling, id);
        const strangers = await draft(stranger, id); // 404: the job is not its tenant's, but it got a slot
        const stillHeld = (await draft(first, id)).status === 503;
        return stillHeld ? { siblings, strangers } : null;
      } finally {
        leaving.abort();
        await Promise.all(held);
      }
    };
    let seen = null;
    for (let attempt = 0; attempt < 5 && !seen; attempt++) seen = await round();
    expect(seen).toEqual({
      siblings: { status: 503, code: 'service_busy' },
      strangers: { status: 404, code: expect.any(String) },
    });
  }, 300_000);
});
