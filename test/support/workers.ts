import type { Config } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import type { WorkerKind } from '../../src/workers/worker-kind.js';

/** Real workers in this process, on the same config (and so the same topics) as a test gateway. */
export function startTestWorkers(config: Config, kinds: WorkerKind[]): Promise<RunningWorkers> {
  return startWorkers({
    config,
    logger: createLogger('warn', 'test-workers'),
    kinds,
    messageRetry: { attempts: 3, baseMs: 50, maxMs: 200 },
  });
}
