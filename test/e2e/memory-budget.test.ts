import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { demo } from '../../src/admin/commands/demo.js';
import { admin, bearer, type Demo } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// Issue 31: the gateway's memory budget (here the manifests' 768 MiB; upload quotas out of the
// way) reserves what a body will hold from its Content-Length before reading it. A body that
// trickles holds its reservation meanwhile, which makes the budget's states easy to reach: each
// 16 MiB batch declared holds 5 × 16 MiB of the 198 MiB left for requests.
const MiB = 1024 * 1024;
const huge = String(1024 * MiB);
const suite = useGatewaySuite({
  env: () => ({
    GATEWAY_MEMORY_BUDGET_BYTES: String(768 * MiB),
    UPLOAD_BYTES_PER_SECOND: huge,
    UPLOAD_BYTES_PER_SECOND_PER_TENANT: huge,
  }),
});
const batchPath = '/api/v1/inbound/targets/batch';
const declared = 16 * MiB;

type Answer = { status: number; code?: string; retryAfter?: string };
const open: http.ClientRequest[] = [];
afterEach(() => open.splice(0).forEach((req) => req.destroy()));

/** Declares a 16 MiB batch and sends one byte of it: answered only if refused before reading. */
function declare(apiKey: string): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.request(new URL(batchPath, suite.gateway.url), {
      method: 'POST',
      headers: { ...bearer(apiKey), 'content-type': 'application/json', 'content-length': declared },
    });
    open.push(req);
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          code: (JSON.parse(text) as { error?: { code?: string } }).error?.code,
          retryAfter: res.headers['retry-after'],
        }),
      );
    });
    req.on('error', () => undefined); // destroyed after the test
    req.write('{');
  });
}

/** Another tenant's client. */
const tenant = async (name: string) => ((await admin(suite.pool, demo, ['--name', name])) as Demo).clients.all!.apiKey;

const pushOne = (apiKey: string, id: string) =>
  suite.api.post('/api/v1/inbound/targets', {
    headers: bearer(apiKey),
    body: { sourceSystem: 'memory', ...makeTargets(1, id)[0]! },
  });

describe('the gateway memory budget', () => {
  it("refuses a client past its share (429) and everyone past the budget (503) unread; others' small requests go on", async () => {
    const abuser = suite.demo.clients.all!.apiKey;
    void declare(abuser); // holds its tenant's share while it trickles
    // Until the gateway has read the first one's headers, a second may still be admitted.
    const share = await eventually(async () => {
      const answer = await Promise.race([declare(abuser), new Promise<null>((r) => setTimeout(() => r(null), 500))]);
      return answer?.status === 429 ? answer : undefined;
    }, 60_000);
    expect(share).toEqual({ status: 429, code: 'memory_share_exceeded', retryAfter: '1' });

    const [second, third, fourth] = await Promise.all([tenant('second'), tenant('third'), tenant('fourth')]);
    void declare(second);
    const full = await eventually(async () => {
      const answer = await Promise.race([declare(third), new Promise<null>((r) => setTimeout(() => r(null), 500))]);
      return answer?.status === 503 ? answer : undefined;
    }, 60_000);
    expect(full).toEqual({ status: 503, code: 'service_busy', retryAfter: '1' });

    // Small bodies of other tenants still fit.
    expect((await pushOne(fourth, 'small')).status).toBe(200);
  });

  it('frees what a request held once its client leaves or it is answered', async () => {
    // The previous test's trickles were destroyed: their reservations go when the gateway notices.
    const abuser = suite.demo.clients.all!.apiKey;
    const batch = { sourceSystem: 'memory', targets: makeTargets(500, 'freed') };
    await eventually(async () => {
      const res = await suite.api.post(batchPath, { headers: bearer(abuser), body: batch });
      return res.status === 200 ? true : undefined;
    }, 60_000);
    // Answered batches hold nothing: a 16 MiB body, past anything else the tenant holds, is admitted
    // (it waits for its bytes) instead of being refused at once.
    const answer = await Promise.race([declare(abuser), new Promise<null>((r) => setTimeout(() => r(null), 2000))]);
    expect(answer).toBeNull();
  });
});
