import { keptListener, type ListenLoss } from '../../shared/db/listener.js';
import type { Logger } from '../../shared/logger.js';
import { pause } from '../../shared/retry.js';
import { InFlightSlots } from '../http/in-flight.js';

// Long-poll waiters of the event feed, woken by PostgreSQL's NOTIFY (migrations/0016: every
// committed webhook_events insert notifies channel webhook_event with its client id). One
// dedicated connection per gateway LISTENs for all waiters (shared/db/listener.ts: only to a
// server that accepts writes, checked, replaced with backoff when lost); it connects when the
// first waiter comes and reconnects after a loss while anyone waits, waking every waiter then (a
// notification sent while it was away is lost, so each re-reads).

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
  /** How often the LISTEN connection checks that its server still accepts writes (listener.ts's checkMs). */
  checkMs?: number;
  /** The LISTEN connection was lost and is replaced (counted by the gateway's metrics). */
  onLost?: (why: ListenLoss) => void;
};

export const eventChannel = 'webhook_event';

type Slot = { woken: boolean; wake: (() => void) | null };

export function createEventWaits(
  databaseUrl: string,
  limits: EventWaitLimits,
  logger: Logger,
  { checkMs, onLost }: EventWaitOptions = {},
): EventWaits {
  const byClient = new Map<string, Set<Slot>>();
  const slots = new InFlightSlots({ client: { count: limits.perClient }, tenant: { count: limits.perTenant } });
  let closed = false;

  const wake = (slot: Slot) => {
    slot.woken = true;
    slot.wake?.();
  };
  const wakeAll = () => byClient.forEach((waiting) => waiting.forEach(wake));
  const listener = keptListener({
    databaseUrl,
    channels: [eventChannel],
    applicationName: 'connect-gateway-events',
    what: 'event feed',
    logger,
    onNotification: (msg) => byClient.get(msg.payload ?? '')?.forEach(wake),
    onListening: wakeAll, // anything committed before LISTEN took effect is found by a re-read
    reconnect: () => byClient.size > 0,
    ...(onLost ? { onLost } : {}),
    ...(checkMs ? { checkMs } : {}),
  });

  async function close(): Promise<void> {
    closed = true;
    wakeAll();
    await listener.close();
  }

  function enter({ clientId, tenantId }: { clientId: string; tenantId: string }): Waiter | null {
    if (closed) return null;
    const release = slots.take('events', { client: clientId, tenant: tenantId }, limits.max);
    if (!release) return null;
    const slot: Slot = { woken: false, wake: null };
    const waiting = byClient.get(clientId) ?? new Set<Slot>();
    byClient.set(clientId, waiting.add(slot));
    listener.start();
    let left = false;
    return {
      async next(ms, signal) {
        if (slot.woken) {
          slot.woken = false;
          return 'woken';
        }
        if (closed) return 'closed';
        const woken = new AbortController();
        slot.wake = () => woken.abort();
        await pause(ms, AbortSignal.any([signal, woken.signal]));
        slot.wake = null;
        if (!slot.woken) return signal.aborted ? 'aborted' : 'timeout';
        slot.woken = false;
        return closed ? 'closed' : 'woken';
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
