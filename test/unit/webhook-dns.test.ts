import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookResolver } from '../../src/shared/webhooks/dns-cache.js';
import { postWebhook } from '../../src/workers/webhooks/post.js';
import { startDnsStub, type DnsStub } from '../support/dns-stub.js';
import { eventually } from '../support/kafka.js';
import { scaled } from '../support/time-scale.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// Issue 50: webhook attempts resolve names without libuv's thread pool (four threads that
// dns.lookup shares across the process), so one tenant's slow-resolving hosts delay nobody
// else's attempts, and answers are kept for their TTL. A DNS stub on 127.0.0.1 answers some names
// at once, holds the queries of "slow" ones, and counts what it is asked.

const slow = Array.from({ length: 8 }, (_, i) => `slow-${i}.test`); // twice the thread pool
let dns: DnsStub;
let receiver: WebhookReceiver;

beforeAll(async () => {
  dns = await startDnsStub({
    a: {
      'fast.test': { address: '127.0.0.1', ttl: 3600 },
      'kept.test': { address: '127.0.0.1', ttl: 3600 },
      'short.test': { address: '127.0.0.1', ttl: 1 },
      'zero.test': { address: '127.0.0.1', ttl: 0 },
    },
    slow,
  });
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  dns?.release();
  await dns?.close();
  await receiver?.close();
});

const post = (
  url: string,
  resolver: ReturnType<typeof createWebhookResolver>,
  timeoutMs: number,
  allowPrivate = true,
) => postWebhook(url, { 'webhook-id': 'evt_dns' }, '{}', { timeoutMs, allowPrivate, resolver });

describe('webhook DNS', () => {
  it("an attempt to a host that resolves is not held up by other hosts' slow resolution", async () => {
    // c-ares asks each slow name for 20 s (4 tries of 5 s): the attempts' own timeout ends them first.
    const resolver = createWebhookResolver({ servers: [dns.server], timeoutMs: 5000, tries: 4 });
    let settled = 0;
    const stuck = slow.map((host) =>
      post(`http://${host}:${receiver.port}/slow`, resolver, scaled(4000)).finally(() => settled++),
    );
    await eventually(
      () => (slow.every((host) => dns.queries(host) > 0) ? true : undefined),
      scaled(10_000),
      'every slow name asked of the DNS stub',
    );
    const fast = await post(`http://fast.test:${receiver.port}/fast`, resolver, scaled(30_000));
    expect(fast.outcome).toBe('Succeeded');
    expect(settled).toBe(0); // …while every slow attempt was still waiting for its name
    expect(receiver.received('/fast')).toHaveLength(1);
    const ended = await Promise.all(stuck); // bounded by the attempt's timeout, DNS included
    for (const r of ended) expect(r).toMatchObject({ outcome: 'Timeout', statusCode: null });
    expect(receiver.received('/slow')).toHaveLength(0);
  });

  it('keeps an answer for its TTL, and asks again once it ran out', async () => {
    const resolver = createWebhookResolver({ servers: [dns.server] });
    for (let i = 0; i < 3; i++)
      expect(await resolver.lookupAll('kept.test')).toEqual([{ address: '127.0.0.1', family: 4 }]);
    expect(dns.queries('kept.test')).toBe(1); // TTL 3600: asked once

    await resolver.lookupAll('short.test');
    expect(dns.queries('short.test')).toBe(1);
    await eventually(
      async () => {
        await resolver.lookupAll('short.test');
        return dns.queries('short.test') >= 2 ? true : undefined;
      },
      scaled(15_000),
      'the 1 s TTL to run out and the name to be asked again',
    );

    for (let i = 0; i < 3; i++) await resolver.lookupAll('zero.test');
    expect(dns.queries('zero.test')).toBe(3); // TTL 0: never kept
  });

  it('checks the address it connects to against the SSRF policy', async () => {
    const resolver = createWebhookResolver({ servers: [dns.server] });
    const refused = await post(`http://fast.test:${receiver.port}/refused`, resolver, scaled(10_000), false);
    expect(refused.outcome).toBe('Refused');
    expect(refused.error).toMatch(
      /^target address 127\.0\.0\.1 \(fast\.test resolves to 127\.0\.0\.1\) is in a loopback range/,
    );
    expect(receiver.received('/refused')).toHaveLength(0);
  });

  it('resolves localhost without asking DNS', async () => {
    const resolver = createWebhookResolver({ servers: [dns.server] });
    const addresses = await resolver.lookupAll('localhost');
    expect(addresses.map((a) => a.address)).toContain('127.0.0.1');
    expect(dns.queries('localhost')).toBe(0);
    const sent = await post(`http://localhost:${receiver.port}/local`, resolver, scaled(10_000));
    expect(sent.outcome).toBe('Succeeded');
  });
});
