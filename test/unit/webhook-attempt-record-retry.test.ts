import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/logger.js';
import { attemptDelivery, recordRacesRetried, type AttemptDeps } from '../../src/workers/webhooks/attempt.js';
import { createWebhookAgents } from '../../src/workers/webhooks/post.js';
import type { Claimed, Outcome, Recorded } from '../../src/workers/webhooks/record.js';

// attempt.ts: an attempt made is recorded, and recording it again after a deadlock (issue 50: two
// recordings of one endpoint's successes deadlocked; the one given up was sent again when its
// lease ran out) is what keeps a success from being sent twice. The receiver is a local server;
// the recording is a stub (what PostgreSQL answers is the point here, not the statement).

let server: http.Server;
let requests = 0;
const agents = createWebhookAgents({ allowPrivate: true });
// The lease keeper's pool: never used (the lease outlasts the test, no renewal is due).
const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => res.writeHead(200).end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  agents.destroy();
  await pool.end();
  await new Promise((resolve) => server.close(resolve));
});

const delivery = (id: string): Claimed => ({
  id,
  tenant_id: '00000000-0000-4000-8000-000000000001',
  event_id: `evt_${id}`,
  endpoint_id: '00000000-0000-4000-8000-000000000002',
  attempt_count: 1,
  round_attempts: 1,
  lease_token: '00000000-0000-4000-8000-000000000003',
  type: 'import_job.completed',
  body: '{}',
  url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
  secret: 'whsec_dGVzdHNlY3JldHRlc3RzZWNyZXQ=',
  previous_secret: null,
});

const deadlock = () => Object.assign(new Error('deadlock detected'), { code: '40P01' });

function deps(record: (o: Outcome) => Promise<Recorded>): AttemptDeps {
  return {
    pool,
    begin: async (d) => ({ attempt_count: d.attempt_count, round_attempts: d.round_attempts }),
    record,
    webhooks: { timeoutMs: 5000, allowPrivateTargets: true },
    leaseMs: 600_000,
    agents,
    log: createLogger('silent', 'test-attempt'),
    stopped: new AbortController().signal,
  };
}

describe('recording an attempt made', () => {
  it('is tried again after a deadlock, and the delivery is sent once', async () => {
    const before = requests;
    let tries = 0;
    const made = await attemptDelivery(
      delivery('1'),
      deps(async () => {
        if (++tries <= 2) throw deadlock();
        return { outcome: 'succeeded', breakerClosed: false };
      }),
    );
    expect(made?.recorded).toEqual({ outcome: 'succeeded', breakerClosed: false });
    expect(tries).toBe(3);
    expect(requests - before).toBe(1);
  });

  it(`gives up after ${recordRacesRetried} deadlocks in a row, and on any other error at once`, async () => {
    let tries = 0;
    await expect(
      attemptDelivery(
        delivery('2'),
        deps(async () => {
          tries++;
          throw deadlock();
        }),
      ),
    ).rejects.toThrow('deadlock detected');
    expect(tries).toBe(recordRacesRetried + 1);

    tries = 0;
    await expect(
      attemptDelivery(
        delivery('3'),
        deps(async () => {
          tries++;
          throw Object.assign(new Error('violates foreign key constraint'), { code: '23503' });
        }),
      ),
    ).rejects.toThrow('foreign key');
    expect(tries).toBe(1);
  });
});
