import { describe, expect, it } from 'vitest';
import { demo } from '../../src/admin/commands/demo.js';
import { admin, bearer, type Demo } from '../support/fixtures.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// One client sends the worst it may (largest batches, as many as its share allows; bodies that
// trickle; deeply nested and very wide bodies) while a client of another tenant works as usual. The other
// client's requests all succeed (no 503 from slots the abuser holds), the abuser is held to its
// upload quota (429 once it has sent its bytes) and /livez keeps answering;
// the latencies are printed (figures, not assertions: this machine is shared; and the gateway runs
// in this test process, so the abuser's own client work shares its event loop and the abused
// figures overstate what a separate gateway process sees: `npm run bench:noisy` measures that).
const suite = useGatewaySuite({ env: () => ({ BODY_READ_TIMEOUT_MS: '3000' }) });

const percentile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};

async function timed(send: () => Promise<Response>): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await send();
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - started };
}

describe('a noisy neighbour', () => {
  it('cannot take the other clients’ slots or stall the event loop', async () => {
    const url = (path: string) => new URL(path, suite.gateway.url);
    const abuser = bearer(suite.demo.clients.all!.apiKey);
    // The victim is a client of another tenant: a tenant's own clients share its in-flight share.
    const other = (await admin(suite.pool, demo, ['--name', 'victim'])) as Demo;
    const victim = bearer(other.clients.all!.apiKey);
    let n = 0;
    const victimRound = async () => [
      await timed(() => fetch(url('/livez'))),
      await timed(() => fetch(url('/api/v1/import-jobs?take=5'), { headers: victim })),
      await timed(() =>
        fetch(url('/api/v1/inbound/targets'), {
          method: 'POST',
          headers: { ...victim, 'content-type': 'application/json' },
          body: JSON.stringify({ sourceSystem: 'victim', ...makeTargets(1, `v${n++}`)[0] }),
        }),
      ),
    ];

    const quiet: { status: number; ms: number }[][] = [];
    for (let i = 0; i < 30; i++) quiet.push(await victimRound());

    // The abuser: maximal batches back to back on 8 connections, trickled bodies, hostile shapes.
    const bigBatch = JSON.stringify({ sourceSystem: 'abuse', targets: makeTargets(10_000, 'a') });
    const deep = `{"sourceSystem":"x","targets":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i])));
    let abusing = true;
    const abuserStatuses = new Map<number, number>();
    const count = (status: number) => abuserStatuses.set(status, (abuserStatuses.get(status) ?? 0) + 1);
    const post = (body: string) =>
      fetch(url('/api/v1/inbound/targets/batch'), {
        method: 'POST',
        headers: { ...abuser, 'content-type': 'application/json' },
        body,
      })
        .then(async (r) => {
          await r.arrayBuffer();
          count(r.status);
        })
        .catch(() => count(0));
    const flood = async (body: string) => {
      while (abusing) await post(body);
    };
    const trickle = async () => {
      while (abusing) {
        const stream = new ReadableStream({
          async pull(controller) {
            controller.enqueue(new TextEncoder().encode(' '));
            await new Promise((r) => setTimeout(r, 500));
          },
        });
        await fetch(url('/api/v1/inbound/targets/batch'), {
          method: 'POST',
          headers: { ...abuser, 'content-type': 'application/json' },
          body: stream,
          duplex: 'half',
        } as RequestInit)
          .then(async (r) => {
            await r.arrayBuffer();
            count(r.status);
          })
          .catch(() => count(0));
      }
    };
    const abuse = Promise.all([
      ...Array.from({ length: 8 }, () => flood(bigBatch)),
      flood(deep),
      flood(wide),
      ...Array.from({ length: 16 }, () => trickle()),
    ]);

    const noisy: { status: number; ms: number }[][] = [];
    for (let i = 0; i < 30; i++) noisy.push(await victimRound());
    abusing = false;
    await abuse;

    for (const round of noisy) expect(round.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(abuserStatuses.get(200) ?? 0).toBeGreaterThan(0); // the abuser was really working
    expect(abuserStatuses.get(429) ?? 0).toBeGreaterThan(0); // and sent more than its upload quota
    const figures = (rounds: { ms: number }[][], i: number) => {
      const ms = rounds.map((r) => r[i]!.ms);
      return `${percentile(ms, 0.5).toFixed(1)}/${percentile(ms, 0.99).toFixed(1)}`;
    };
    console.log(
      `noisy neighbour: p50/p99 ms quiet → abused: /livez ${figures(quiet, 0)} → ${figures(noisy, 0)}, ` +
        `import-jobs ${figures(quiet, 1)} → ${figures(noisy, 1)}, single push ${figures(quiet, 2)} → ` +
        `${figures(noisy, 2)}; abuser answers ${JSON.stringify(Object.fromEntries(abuserStatuses))}`,
    );
  }, 600_000);
});
