import { TimeoutError } from '../timeout.js';

/**
 * Whether the broker is worth waiting for. A produce that failed for want of a broker marks it
 * unavailable; from then on writes fail at once (503) instead of each waiting out the produce
 * timeout while holding a PostgreSQL connection, until a probe (one cheap metadata request every
 * probeIntervalMs) gets an answer again.
 *
 * A send that only ran out of time proves less: one client's large upload to a busy broker can
 * time out while the broker answers everyone else. So a timeout is checked first (one probe at
 * once) and marks the broker down only if that probe fails too.
 */
export type BrokerAvailability = {
  available(): boolean;
  /** A send failed because no broker answered (connection refused, no leader, …). */
  markDown(reason: Error): void;
  /** A send timed out: down only if a probe started now fails as well. */
  suspect(reason: Error): void;
  close(): void;
};

export function trackBrokerAvailability(options: {
  probe: () => Promise<void>;
  probeIntervalMs: number;
  onChange?: (available: boolean, reason?: Error) => void;
}): BrokerAvailability {
  let down = false;
  let checking = false;
  let closed = false; // a check that fails after close() must not start probing again
  let timer: NodeJS.Timeout | null = null;

  const schedule = () => {
    timer = setTimeout(() => {
      options.probe().then(
        () => {
          down = false;
          timer = null;
          options.onChange?.(true);
        },
        () => schedule(),
      );
    }, options.probeIntervalMs);
    timer.unref(); // never keeps a stopping process alive
  };

  const markDown = (reason: Error) => {
    if (down || closed) return;
    down = true;
    options.onChange?.(false, reason);
    schedule();
  };

  return {
    available: () => !down,
    markDown,
    suspect(reason) {
      if (down || checking) return;
      checking = true;
      options
        .probe()
        .catch(() => markDown(reason))
        .finally(() => (checking = false));
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}

/**
 * Errors that say "no broker answered" (also when kafkajs wraps one, e.g. a non-retriable
 * "Failed to find group coordinator" while the broker restarts), as opposed to "the broker
 * refused this".
 */
export function isBrokerUnreachable(err: unknown): boolean {
  type KafkaError = { name?: unknown; retriable?: unknown; message?: unknown; cause?: unknown };
  let e = err as KafkaError | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 5; depth++, e = e.cause as KafkaError | undefined) {
    if (e.retriable === true) return true;
    const name = typeof e.name === 'string' ? e.name : '';
    if (
      /Connection|Timeout|NumberOfRetriesExceeded|BrokerNotFound|NoBrokerAvailable|GroupCoordinatorNotFound/.test(name)
    ) {
      return true;
    }
    if (e instanceof TimeoutError) return true;
  }
  return false;
}
