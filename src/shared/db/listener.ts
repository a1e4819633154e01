import pg from 'pg';
import type { Logger } from '../logger.js';
import { retrying, schedules } from '../retry.js';
import { withTimeout } from '../timeout.js';
import { assertWritable } from './writable.js';

// One dedicated connection that LISTENs on PostgreSQL channels, kept: the gateway's event feed
// (gateway/events/notifications.ts) and the webhook dispatcher's wake-up (workers/webhooks/wake.ts).
//
// The connection must lead to the primary: an old primary kept reachable read-only after a
// failover (or a standby behind a misrouted proxy) raises no error on it, but the commits happen
// elsewhere and their notifications never come. So it connects only to a server that accepts
// writes (assertWritable, the readiness probe's condition), and every checkMs checks that its
// server still does (and answers at all); when not, it is replaced like a lost one. A lost
// connection (error, end, failed check) is replaced with backoff (schedules.eventListen). A
// notification sent while nobody listened is lost: every (re)connection calls onListening, so the
// owner looks for what it may have missed (a poll, a re-read).
//
//   idle ─start─▶ connecting ─connected─▶ listening ─lost (error, end, check failed)─▶ idle
//   connecting: retrying() with schedules.eventListen until a writable server LISTENs
//   lost: connecting again at once when reconnect() says so (else at the next start())
//   any ─close─▶ closed

/** Why a LISTEN connection was replaced: it failed (error), the server ended it (end), or its check failed. */
export type ListenLoss = 'error' | 'end' | 'check';

export type ListenerOptions = {
  databaseUrl: string;
  channels: string[];
  /** application_name of the connection (what pg_stat_activity shows). */
  applicationName: string;
  /** Names the connection in log lines ("event feed", "webhook dispatcher"). */
  what: string;
  logger: Logger;
  onNotification: (msg: pg.Notification) => void;
  /** Each time a connection LISTENs (the first and every replacement): look for what was missed. */
  onListening: () => void;
  /** A listening connection was lost and is replaced (counted: listen_connections_lost_total). */
  onLost?: (why: ListenLoss) => void;
  /** After a loss, whether to connect again at once (default: always). */
  reconnect?: () => boolean;
  /**
   * How often the connection checks that its server still accepts writes, and how long that
   * check (and a connection attempt) may take. Default: the longest wait between reconnects
   * (schedules.eventListen), so a connection left on a read-only old primary is replaced within
   * about as long as one lost outright.
   */
  checkMs?: number;
};

export type Listener = {
  /** Connects unless already connecting or listening (or closed). */
  start(): void;
  /** Whether the connection LISTENs now. */
  listening(): boolean;
  close(): Promise<void>;
};

type State =
  | { name: 'idle' | 'closed' }
  | { name: 'connecting'; stop: AbortController; done: Promise<void> }
  | { name: 'listening'; client: pg.Client; checkTimer: NodeJS.Timeout };

export function keptListener(options: ListenerOptions): Listener {
  const { databaseUrl, channels, what, logger } = options;
  const checkMs = options.checkMs ?? schedules.eventListen.maxMs;
  let state: State = { name: 'idle' };
  const end = (client: pg.Client) => void client.end().catch(() => undefined);

  // One attempt: a connection to a server that accepts writes (a read-only one is refused and
  // retried like one that does not answer), listening.
  const connect = async (stop: AbortSignal): Promise<pg.Client> => {
    stop.throwIfAborted();
    const client = new pg.Client({
      connectionString: databaseUrl,
      application_name: options.applicationName,
      keepAlive: true, // a silently lost server is noticed (and the connection replaced)
      // An attempt that gets no answer (a server gone without closing the connection, a proxy that
      // holds it) fails like a refused one and is retried, instead of staying connecting.
      connectionTimeoutMillis: checkMs,
      query_timeout: checkMs,
    });
    client.on('error', (err) => lost(client, 'error', err));
    client.on('end', () => lost(client, 'end'));
    client.on('notification', (msg) => options.onNotification(msg));
    try {
      await client.connect();
      await assertWritable(client);
      await client.query(channels.map((c) => `LISTEN ${c}`).join('; '));
      return client;
    } catch (err) {
      end(client);
      throw err;
    }
  };

  function start(): void {
    if (state.name !== 'idle') return;
    const stop = new AbortController();
    const done = retrying(schedules.eventListen, () => connect(stop.signal), {
      retriable: () => true,
      onRetry: (err, failures, retryInMs) =>
        logger.warn({ err, failures, retryInMs }, `${what} LISTEN connection failed; reconnecting`),
      signal: stop.signal,
    }).then(
      (client) => {
        if (state.name !== 'connecting') return end(client);
        state = { name: 'listening', client, checkTimer: setInterval(() => check(client), checkMs).unref() };
        options.onListening(); // anything committed before LISTEN took effect is looked for now
      },
      () => undefined, // closed while connecting
    );
    state = { name: 'connecting', stop, done };
  }

  function lost(client: pg.Client, why: ListenLoss, err?: Error): void {
    if (state.name !== 'listening' || state.client !== client) return;
    clearInterval(state.checkTimer);
    state = { name: 'idle' };
    end(client);
    logger.warn({ err, why }, `${what} LISTEN connection lost; reconnecting`);
    options.onLost?.(why);
    if (options.reconnect?.() ?? true) start();
  }

  // listening: the server still accepts writes and answers within checkMs, else the connection is lost.
  const check = (client: pg.Client) =>
    withTimeout(assertWritable(client), checkMs, `${what} LISTEN connection check`).catch((err: Error) =>
      lost(client, 'check', err),
    );

  return {
    start,
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
