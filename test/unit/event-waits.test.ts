import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { createEventWaits } from '../../src/gateway/events/notifications.js';
import { eventually } from '../support/kafka.js';
import { capturedLogger } from '../support/webhook-events.js';

// The event feed's waiters without a database to LISTEN on (nothing listens on port 1): the
// bounds, and close() while the LISTEN connection is still being retried. The LISTEN connection
// itself: test/integration/postgres-read-only-probes.test.ts.

const nowhere = 'postgres://events@127.0.0.1:1/events';

describe('event feed waiters', () => {
  it("are bounded per client, per tenant and in all, and a waiter's leave frees its place", async () => {
    const { logger } = capturedLogger('test-event-waits');
    const waits = createEventWaits(nowhere, { perClient: 2, perTenant: 3, max: 4 }, logger);
    try {
      const enter = (clientId: string, tenantId: string) => waits.enter({ clientId, tenantId });
      const a1 = enter('a', 't');
      expect(a1).not.toBeNull();
      expect(enter('a', 't')).not.toBeNull();
      expect(enter('a', 't')).toBeNull(); // the client's 2
      expect(enter('b', 't')).not.toBeNull();
      expect(enter('c', 't')).toBeNull(); // the tenant's 3
      expect(enter('d', 'u')).not.toBeNull();
      expect(enter('e', 'v')).toBeNull(); // the gateway's 4
      a1!.leave();
      a1!.leave(); // once only
      expect(enter('e', 'v')).not.toBeNull();
      expect(enter('f', 'w')).toBeNull();
    } finally {
      await waits.close();
    }
  });

  it('close() ends a wait and the reconnect attempts, and refuses later entries', async () => {
    const { logger, lines } = capturedLogger('test-event-waits');
    const waits = createEventWaits(nowhere, { perClient: 1, perTenant: 1, max: 1 }, logger);
    const waiter = waits.enter({ clientId: 'a', tenantId: 't' })!;
    const waiting = waiter.next(600_000, new AbortController().signal);
    // Failing to connect, with backoff.
    await eventually(async () => (lines.length >= 2 ? true : undefined), 30_000, 'two failed LISTEN connections');
    await waits.close();
    expect(await waiting).toBe('closed');
    expect(waits.enter({ clientId: 'b', tenantId: 'u' })).toBeNull();
    const logged = lines.length;
    await new Promise((r) => setTimeout(r, 300)); // longer than the next two waits (0.1 s, 0.2 s … )
    expect(lines.length).toBe(logged); // no attempt after close
  });

  it("a waiter's next() answers its abort, its timeout, or at once when woken before", async () => {
    const { logger } = capturedLogger('test-event-waits');
    const waits = createEventWaits(nowhere, { perClient: 1, perTenant: 1, max: 1 }, logger);
    try {
      const waiter = waits.enter({ clientId: 'a', tenantId: 't' })!;
      const abort = new AbortController();
      const aborted = waiter.next(600_000, abort.signal);
      abort.abort();
      expect(await aborted).toBe('aborted');
      expect(await waiter.next(1, new AbortController().signal)).toBe('timeout');
      expect(await waiter.next(1, abort.signal)).toBe('aborted'); // aborted before it waits
    } finally {
      await waits.close();
    }
  });
  it('gives up an attempt the server never answers (it accepts the connection and says nothing) and retries', async () => {
    // As a server gone without closing its connections, or a proxy that holds them, looks.
    const held: net.Socket[] = [];
    const silent = net.createServer((socket) => void held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    const { logger, lines } = capturedLogger('test-event-waits');
    const waits = createEventWaits(
      `postgres://events@127.0.0.1:${port}/events`,
      { perClient: 1, perTenant: 1, max: 1 },
      logger,
      {
        checkMs: 200,
      },
    );
    try {
      const waiter = waits.enter({ clientId: 'a', tenantId: 't' })!;
      void waiter.next(600_000, new AbortController().signal);
      await eventually(
        async () => (lines.length >= 2 ? true : undefined),
        30_000,
        'two unanswered LISTEN attempts given up',
      );
      expect(held.length).toBeGreaterThanOrEqual(2); // each a connection of its own, accepted
      expect(lines.map((l) => l.msg)).toContain('event feed LISTEN connection failed; reconnecting');
    } finally {
      await waits.close();
      held.forEach((socket) => socket.destroy());
      silent.close();
    }
  });
});
