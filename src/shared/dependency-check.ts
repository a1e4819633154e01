/** One dependency as a health or readiness report shows it. */
export type DependencyCheck = { status: 'Up' | 'Down'; latencyMs: number; error: string | null };

/** Runs a probe (bounded by the caller) and reports it: Up with its latency, or Down with why. */
export async function checkDependency(probe: () => Promise<unknown>): Promise<DependencyCheck> {
  const started = performance.now();
  try {
    await probe();
    return { status: 'Up', latencyMs: Math.round(performance.now() - started), error: null };
  } catch (err) {
    return { status: 'Down', latencyMs: Math.round(performance.now() - started), error: (err as Error).message };
  }
}
