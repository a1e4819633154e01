import { keptListener, type ListenLoss } from '../../shared/db/listener.js';
import type { Logger } from '../../shared/logger.js';
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
// The connection is kept as the gateway's is (shared/db/listener.ts): only to a server that
// accepts writes, checked every checkMs, replaced with backoff when lost (counted: onLost). Every
// (re)connection wakes the dispatcher once: whatever was committed while nobody listened is found
// by that poll.

export const wakeApplicationName = 'connect-webhooks-wake';

/** migrations/0016's channel (the gateway's eventChannel): one notification per client and committing transaction. */
const eventChannel = 'webhook_event';

export type WakeListener = {
  /** Whether the connection LISTENs now (else the poll alone finds due deliveries until it is back). */
  listening(): boolean;
  close(): Promise<void>;
};

export function listenForDueDeliveries(
  databaseUrl: string,
  wake: () => void,
  logger: Logger,
  { checkMs, onLost }: { checkMs?: number; onLost?: (why: ListenLoss) => void } = {},
): WakeListener {
  const listener = keptListener({
    databaseUrl,
    channels: [eventChannel, deliveryChannel],
    applicationName: wakeApplicationName,
    what: 'webhook dispatcher',
    logger,
    onNotification: () => wake(),
    onListening: wake,
    ...(onLost ? { onLost } : {}),
    ...(checkMs ? { checkMs } : {}),
  });
  listener.start();
  return { listening: listener.listening, close: listener.close };
}
