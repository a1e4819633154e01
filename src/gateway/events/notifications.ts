import pg from 'pg';
import { assertWritable } from '../../shared/db/writable.js';
import type { Logger } from '../../shared/logger.js';
import { backoffMs, schedules } from '../../shared/retry.js';
import { withTimeout } from '../../shared/timeout.js';

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

type Slot = { woken: boolean; wake: (() => void) | null; clientId: string; tenantId: string };

export function createEventWaits(
  databaseUrl: string,
  limits: EventWaitLimits,
  logger: Logger,
  { checkMs = schedules.eventListen.maxMs }: EventWaitOptions = {},
): EventWaits {
  const byClient = new Map<string, Set<Slot>>();
  const perTenant = new Map<string, number>();
  let total = 0;
  let closing = false;
  let connection: pg.Client | null = null;
  let connecting: Promise<void> | null = null;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;

  const wake = (slot: Slot) => {
    slot.woken = true;
    slot.wake?.();
  };
  const wakeAll = () => byClient.forEach((slots) => slots.forEach(wake));

  function listen(): void {
    if (closing || connection || connecting) return;
    const client = new pg.Client({
      connectionString: databaseUrl,
      application_name: 'connect-gateway-events',
      keepAlive: true, // a silently lost server is noticed (and the connection replaced)
    });
    let lost = false;
    let checkTimer: NodeJS.Timeout | undefined;
    const onLost = (err?: Error) => {
      if (lost) return;
      lost = true;
      clearInterval(checkTimer);
      if (connection === client) connection = null;
      client.end().catch(() => undefined);
      if (closing) return;
      failures++;
      const retryInMs = backoffMs(schedules.eventListen, failures);
      logger.warn({ err, retryInMs }, 'event feed LISTEN connection lost; reconnecting');
      retryTimer = setTimeout(() => {
        if (total > 0) listen();
      }, retryInMs);
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (msg) => byClient.get(msg.payload ?? '')?.forEach(wake));
    connecting = client
      .connect()
      .then(() => assertWritable(client)) // a read-only server: lost, retried with backoff
      .then(() => client.query(`LISTEN ${eventChannel}`))
      .then(
        () => {
          if (lost) return;
          connection = client;
          failures = 0;
          if (closing) void client.end().catch(() => undefined);
          else checkTimer = setInterval(check, checkMs).unref();
          wakeAll(); // anything committed before LISTEN took effect is found by a re-read
        },
        (err: Error) => onLost(err),
      )
      .finally(() => (connecting = null));
    let checking = false;
    function check(): void {
      if (checking || lost) return;
      checking = true;
      withTimeout(assertWritable(client), checkMs, 'event feed LISTEN connection check')
        .catch((err: Error) => onLost(err))
        .finally(() => (checking = false));
    }
  }

  return {
    enter({ clientId, tenantId }) {
      if (closing) return null;
      const mine = byClient.get(clientId)?.size ?? 0;
      const tenants = perTenant.get(tenantId) ?? 0;
      if (mine >= limits.perClient || tenants >= limits.perTenant || total >= limits.max) return null;
      const slot: Slot = { woken: false, wake: null, clientId, tenantId };
      if (!byClient.has(clientId)) byClient.set(clientId, new Set());
      byClient.get(clientId)!.add(slot);
      perTenant.set(tenantId, tenants + 1);
      total++;
      listen();
      let left = false;
      return {
        next(ms, signal) {
          if (slot.woken) {
            slot.woken = false;
            return Promise.resolve('woken');
          }
          if (closing) return Promise.resolve('closed');
          return new Promise<WaitOutcome>((resolve) => {
            const done = (outcome: WaitOutcome) => {
              clearTimeout(timer);
              signal.removeEventListener('abort', onAbort);
              slot.wake = null;
              slot.woken = false;
              resolve(outcome);
            };
            const onAbort = () => done('aborted');
            const timer = setTimeout(() => done('timeout'), ms);
            signal.addEventListener('abort', onAbort, { once: true });
            slot.wake = () => done(closing ? 'closed' : 'woken');
            if (signal.aborted) onAbort();
          });
        },
        leave() {
          if (left) return;
          left = true;
          const slots = byClient.get(clientId)!;
          slots.delete(slot);
          if (slots.size === 0) byClient.delete(clientId);
          const n = perTenant.get(tenantId)! - 1;
          if (n === 0) perTenant.delete(tenantId);
          else perTenant.set(tenantId, n);
          total--;
        },
      };
    },
    async close() {
      closing = true;
      clearTimeout(retryTimer);
      wakeAll();
      await connecting?.catch(() => undefined);
      await connection?.end().catch(() => undefined);
      connection = null;
    },
  };
}
