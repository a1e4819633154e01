import type { Pool } from '../../shared/db/pool.js';
import type { MessageBus } from '../../shared/kafka/bus.js';
import { checkDependency as timed, type DependencyCheck } from '../../shared/dependency-check.js';
import { withTimeout } from '../../shared/timeout.js';

export type DependencyChecks = { postgres: DependencyCheck; kafka: DependencyCheck };
export type CheckDependencies = () => Promise<DependencyChecks>;

/** Probes PostgreSQL (SELECT 1) and Kafka (cluster metadata) in parallel, each bounded by timeoutMs. */
export function createDependencyChecks(pool: Pool, bus: MessageBus, timeoutMs: number): CheckDependencies {
  const pgProbe = () => withTimeout(pool.query('SELECT 1'), timeoutMs, 'postgres ping');
  return async () => {
    const [postgres, kafka] = await Promise.all([timed(pgProbe), timed(() => bus.ping(timeoutMs))]);
    return { postgres, kafka };
  };
}
