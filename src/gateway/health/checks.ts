import type { Pool } from '../../shared/db/pool.js';
import type { MessageBus } from '../../shared/kafka/bus.js';
import { checkWritable } from '../../shared/db/writable.js';
import { checkDependency as timed, type DependencyCheck } from '../../shared/dependency-check.js';
import { withTimeout } from '../../shared/timeout.js';

export type DependencyChecks = { postgres: DependencyCheck; kafka: DependencyCheck };
export type CheckDependencies = () => Promise<DependencyChecks>;

/**
 * Probes PostgreSQL and Kafka (cluster metadata) in parallel, each bounded by timeoutMs.
 * PostgreSQL is Up only when it accepts writes (checkWritable): a standby or an old primary kept
 * reachable read-only after a failover answers, but is Down with an error saying "read-only".
 */
export function createDependencyChecks(pool: Pool, bus: MessageBus, timeoutMs: number): CheckDependencies {
  const pgProbe = () => withTimeout(checkWritable(pool), timeoutMs, 'postgres ping');
  return async () => {
    const [postgres, kafka] = await Promise.all([timed(pgProbe), timed(() => bus.ping(timeoutMs))]);
    return { postgres, kafka };
  };
}
