import { checkDependency as timed, type DependencyCheck } from '../../shared/dependency-check.js';

/** starting: waiting for Kafka or joining groups; running: every hosted kind started; stopping: on SIGTERM. */
export type WorkersState = 'starting' | 'running' | 'stopping';

export type Readiness = {
  ready: boolean;
  state: WorkersState;
  /** kafka only in a process that hosts a consumer group (the webhook dispatcher needs no broker). */
  checks: { postgres: DependencyCheck; kafka?: DependencyCheck };
};

/**
 * Ready: every hosted kind started, PostgreSQL answers and accepts writes (a read-only one is
 * Down: scrape-queries.ts ping) and, when needed, the broker; probes run side by side (each bounded
 * by its own timeout).
 */
export function createReadiness(probes: {
  postgres: () => Promise<unknown>;
  kafka?: () => Promise<unknown>;
  state: () => WorkersState;
}): () => Promise<Readiness> {
  return async () => {
    const [postgres, kafka] = await Promise.all([
      timed(probes.postgres),
      probes.kafka ? timed(probes.kafka) : undefined,
    ]);
    const state = probes.state();
    const ready = state === 'running' && postgres.status === 'Up' && (!kafka || kafka.status === 'Up');
    return { ready, state, checks: kafka ? { postgres, kafka } : { postgres } };
  };
}
