import type { Pool } from '../../shared/db/pool.js';
import type { MessageBus } from '../../shared/kafka/bus.js';
import { withTimeout } from '../../shared/timeout.js';

export type DependencyCheck = { status: 'Up' | 'Down'; latencyMs: number; error: string | null };
export type DependencyChecks = { postgres: DependencyCheck; kafka: DependencyCheck };
export type CheckDependencies = () => Promise<DependencyChecks>;

async function timed(probe: () => Promise<unknown>): Promise<DependencyCheck> {
  const started = performance.now();
  try {
    await probe();
    return { status: 'Up', latencyMs: Math.round(performance.now() - started), error: null };
  } catch (err) {
    return { status: 'Down', latencyMs: Math.round(performance.now() - started), error: (err as Error).message };
  }
}

/** Probes PostgreSQL (SELECT 1) and Kafka (cluster metadata) in parallel, each bounded by timeoutMs. */
export function createDependencyChecks(pool: Pool, bus: MessageBus, timeoutMs: number): CheckDependencies {
  const pgProbe = () => withTimeout(pool.query('SELECT 1'), timeoutMs, 'postgres ping');
  return async () => {
    const [postgres, kafka] = await Promise.all([timed(pgProbe), timed(() => bus.ping(timeoutMs))]);
    return { postgres, kafka };
  };
}
