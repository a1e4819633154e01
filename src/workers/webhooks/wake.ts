import pg from 'pg';
import { assertWritable } from '../../shared/db/writable.js';
import type { Logger } from '../../shared/logger.js';
import { retrying, schedules } from '../../shared/retry.js';
import { withTimeout } from '../../shared/timeout.js';
import { deliveryChannel } from '../../shared/webhooks/endpoint-deliveries.js';

// The dispatcher's wake-up: one dedicated connection per dispatcher LISTENs on the channels that
// say deliveries became due, so a delivery is claimed milliseconds after its commit instead of at
// the next poll (which stays, as the backstop: for retries coming due, breakers' probes, and any
// notification lost while the connection was away).
//
// - webhook_event (migrations/0016's trigger): every committed webhook_events insert, the same
//   transaction that inserts its deliveries (shared/webhooks/outbox.ts, sendTestEvent).
// - webhook_delivery (shared/webhooks/endpoint-deliveries.ts): deliveries made due without a new
//   event (a replay, an endpoint enabled again), notified in the transaction that does it.
//
// As the gateway's LISTEN connection (gateway/events/notifications.ts): it connects only to a
// server that accepts writes (an old primary kept reachable read-only would never see the commits),
// checks every checkMs that its server still does and answers, and a lost connection (error, end,
// failed check) is replaced with backoff (schedules.eventListen). Every (re)connection wakes the
// dispatcher once: whatever was committed while nobody listened is found by that poll.

export const wakeApplicationName = 'connect-webhooks-wake';

/** migrations/0016's channel (the gateway's eventChannel): one notification per client and committing transaction. */
const eventChannel = 'webhook_event';

export type WakeListener = {
  /** Whether the connection LISTENs now (else the poll alone finds due deliveries until it is back). */
  listening(): boolean;
  close(): Promise<void>;
};

type State =
  | { name: 'idle' | 'closed' }
  | { name: 'connecting'; stop: AbortController; done: Promise<void> }
  | { name: 'listening'; client: pg.Client; checkTimer: NodeJS.Timeout };

export function listenForDueDeliveries(
  databaseUrl: string,
  wake: () => void,
  logger: Logger,
  { checkMs = schedules.eventListen.maxMs }: { checkMs?: number } = {},
): WakeListener {
  let state: State = { name: 'idle' };
  const end = (client: pg.Client) => void client.end().catch(() => undefined);

  const connect = async (stop: AbortSignal): Promise<pg.Client> => {
    stop.throwIfAborted();
    const client = new pg.Client({
      connectionString: databaseUrl,
      application_name: wakeApplicationName,
      keepAlive: true,
      connectionTimeoutMillis: checkMs,
      query_timeout: checkMs,
    });
    client.on('error', (err) => lost(client, err));
    client.on('end', () => lost(client));
    client.on('notification', () => wake());
    try {
      await client.connect();
      await assertWritable(client);
      await client.query(`LISTEN ${eventChannel}; LISTEN ${deliveryChannel}`);
      return client;
    } catch (err) {
      end(client);
      throw err;
    }
  };

  function listen(): void {
    if (state.name !== 'idle') return;
    const stop = new AbortController();
    const done = retrying(schedules.eventListen, () => connect(stop.signal), {
      retriable: () => true,
      onRetry: (err, failures, retryInMs) =>
        logger.warn({ err, failures, retryInMs }, 'webhook dispatcher LISTEN connection failed; reconnecting'),
      signal: stop.signal,
    }).then(
      (client) => {
        if (state.name !== 'connecting') return end(client);
        state = { name: 'listening', client, checkTimer: setInterval(() => check(client), checkMs).unref() };
        wake(); // anything committed before LISTEN took effect is found by this poll
      },
      () => undefined, // closed while connecting
    );
    state = { name: 'connecting', stop, done };
  }

  function lost(client: pg.Client, err?: Error): void {
    if (state.name !== 'listening' || state.client !== client) return;
    clearInterval(state.checkTimer);
    state = { name: 'idle' };
    end(client);
    logger.warn({ err }, 'webhook dispatcher LISTEN connection lost; reconnecting (polling meanwhile)');
    listen();
  }

  const check = (client: pg.Client) =>
    withTimeout(assertWritable(client), checkMs, 'webhook dispatcher LISTEN connection check').catch((err: Error) =>
      lost(client, err),
    );

  listen();

  return {
    listening: () => state.name === 'listening',
    async close() {
      const was = state;
      state = { name: 'closed' };
      if (was.name === 'connecting') {
        was.stop.abort();
        await was.done;
      }
      if (was.name === 'listening') {
        clearInterval(was.checkTimer);
        await was.client.end().catch(() => undefined);
      }
    },
  };
}
