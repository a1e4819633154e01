import pg from 'pg';
import { assertWritable } from '../../shared/db/writable.js';
import type { Logger } from '../../shared/logger.js';
import { pause, retrying, schedules } from '../../shared/retry.js';
import { withTimeout } from '../../shared/timeout.js';
import { InFlightSlots } from '../http/in-flight.js';

// Long-poll waiters of the event feed, woken by PostgreSQL's NOTIFY (migrations/0016: every
// committed webhook_events insert notifies channel webhook_event with its client id). One
// dedicated connection per gateway LISTENs for all waiters; it connects when the first waiter
// comes and reconnects after a failure, waking every waiter then (a notification sent while it was
// away is lost, so each re-reads).
//
// The connection must lead to the primary: an old primary kept reachable read-only after a
// failover (or a standby behind a misrouted proxy) raises no error on it, but the commits happen
// elsewhere and their notifications never come, so long-polls would only see new events at their
// timeout. So it connects only to a server that accepts writes (assertWritable, the readiness
// probe's condition), and every checkMs checks that its server still does (and answers at all);
// when not, it is replaced like a lost one: the reconnect, with backoff, wakes every waiter.

export type WaitOutcome = 'woken' | 'timeout' | 'closed' | 'aborted';

export type Waiter = {
  /** Resolves at once when woken since the last call; else on a wake, the timeout, abort or close. */
  next(ms: number, signal: AbortSignal): Promise<WaitOutcome>;
  leave(): void;
};

export type EventWaits = {
  /** A waiter of the client, or null when its, its tenant's or the gateway's bound is reached. */
  enter(client: { clientId: string; tenantId: string }): Waiter | null;
  /** Ends every wait ('closed') and the connection; later enters get null. */
  close(): Promise<void>;
};

/** Refuses every wait (the OpenAPI document is printed without a database). */
export const noEventWaits: EventWaits = { enter: () => null, close: async () => undefined };

export type EventWaitLimits = { perClient: number; perTenant: number; max: number };

export type EventWaitOptions = {
  /**
   * How often the LISTEN connection checks that its server still accepts writes, and how long
   * that check may take. Default: the longest wait between its reconnects (schedules.eventListen),
   * so a connection left on a read-only old primary is replaced within about as long as one lost
   * outright.
   */
  checkMs?: number;
};

export const eventChannel = 'webhook_event';

type Slot = { woken: boolean; wake: (() => void) | null };

/**
 * The LISTEN connection's lifecycle. Only the connection the state holds is heeded (its loss, its
 * checks); a waiter's entry starts it, a loss starts it again while anyone waits.
 *   idle ─listen─▶ connecting ─connected─▶ listening ─lost (error, end, check failed)─▶ idle
 *   connecting: retrying() with schedules.eventListen until a writable server LISTENs
 *   any ─close─▶ closed
 */
type State =
  | { name: 'idle' | 'closed' }
  | { name: 'connecting'; stop: AbortController; done: Promise<void> }
  | { name: 'listening'; client: pg.Client; checkTimer: NodeJS.Timeout };

export function createEventWaits(
  databaseUrl: string,
  limits: EventWaitLimits,
  logger: Logger,
  { checkMs = schedules.eventListen.maxMs }: EventWaitOptions = {},
): EventWaits {
  const byClient = new Map<string, Set<Slot>>();
  const slots = new InFlightSlots({ client: { count: limits.perClient }, tenant: { count: limits.perTenant } });
  let state: State = { name: 'idle' };
  const closed = () => state.name === 'closed'; // a function: the state may change across an await

  const wake = (slot: Slot) => {
    slot.woken = true;
    slot.wake?.();
  };
  const wakeAll = () => byClient.forEach((waiting) => waiting.forEach(wake));
  const end = (client: pg.Client) => void client.end().catch(() => undefined);

  // One attempt: a connection to a server that accepts writes (a read-only one is refused and
  // retried like one that does not answer), listening.
  const connect = async (stop: AbortSignal): Promise<pg.Client> => {
    stop.throwIfAborted();
    const client = new pg.Client({
      connectionString: databaseUrl,
      application_name: 'connect-gateway-events',
      keepAlive: true, // a silently lost server is noticed (and the connection replaced)
      // An attempt that gets no answer (a server gone without closing the connection, a proxy that
      // holds it) fails like a refused one and is retried, instead of leaving the hub connecting.
      connectionTimeoutMillis: checkMs,
      query_timeout: checkMs,
    });
    client.on('error', (err) => lost(client, err));
    client.on('end', () => lost(client));
    client.on('notification', (msg) => byClient.get(msg.payload ?? '')?.forEach(wake));
    try {
      await client.connect();
      await assertWritable(client);
      await client.query(`LISTEN ${eventChannel}`);
      return client;
    } catch (err) {
      end(client);
      throw err;
    }
  };

  // idle → connecting → listening (or closed meanwhile: the new connection ends).
  function listen(): void {
    if (state.name !== 'idle') return;
    const stop = new AbortController();
    const done = retrying(schedules.eventListen, () => connect(stop.signal), {
      retriable: () => true,
      onRetry: (err, failures, retryInMs) =>
        logger.warn({ err, failures, retryInMs }, 'event feed LISTEN connection failed; reconnecting'),
      signal: stop.signal,
    }).then(
      (client) => {
        if (state.name !== 'connecting') return end(client);
        state = { name: 'listening', client, checkTimer: setInterval(() => check(client), checkMs).unref() };
        wakeAll(); // anything committed before LISTEN took effect is found by a re-read
      },
      () => undefined, // closed while connecting
    );
    state = { name: 'connecting', stop, done };
  }

  // listening → idle, then connecting again if anyone waits.
  function lost(client: pg.Client, err?: Error): void {
    if (state.name !== 'listening' || state.client !== client) return;
    clearInterval(state.checkTimer);
    state = { name: 'idle' };
    end(client);
    logger.warn({ err }, 'event feed LISTEN connection lost; reconnecting');
    if (byClient.size > 0) listen();
  }

  // listening: the server still accepts writes and answers within checkMs, else the connection is lost.
  const check = (client: pg.Client) =>
    withTimeout(assertWritable(client), checkMs, 'event feed LISTEN connection check').catch((err: Error) =>
      lost(client, err),
    );

  // any → closed.
  async function close(): Promise<void> {
    const was = state;
    state = { name: 'closed' };
    wakeAll();
    if (was.name === 'connecting') {
      was.stop.abort();
      await was.done;
    }
    if (was.name === 'listening') {
      clearInterval(was.checkTimer);
      await was.client.end().catch(() => undefined);
    }
  }

  function enter({ clientId, tenantId }: { clientId: string; tenantId: string }): Waiter | null {
    if (closed()) return null;
    const release = slots.take('events', { client: clientId, tenant: tenantId }, limits.max);
    if (!release) return null;
    const slot: Slot = { woken: false, wake: null };
    const waiting = byClient.get(clientId) ?? new Set<Slot>();
    byClient.set(clientId, waiting.add(slot));
    listen();
    let left = false;
    return {
      async next(ms, signal) {
        if (slot.woken) {
          slot.woken = false;
          return 'woken';
        }
        if (closed()) return 'closed';
        const woken = new AbortController();
        slot.wake = () => woken.abort();
        await pause(ms, AbortSignal.any([signal, woken.signal]));
        slot.wake = null;
        if (!slot.woken) return signal.aborted ? 'aborted' : 'timeout';
        slot.woken = false;
        return closed() ? 'closed' : 'woken';
      },
      leave() {
        if (left) return;
        left = true;
        waiting.delete(slot);
        if (waiting.size === 0) byClient.delete(clientId);
        release();
      },
    };
  }

  return { enter, close };
}
