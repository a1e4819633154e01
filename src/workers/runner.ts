// Worker process entry point: `WORKERS=inbound,materials node dist/workers/runner.js`
// hosts one consumer group per named kind (all kinds when WORKERS is empty).
import { loadConfigOrExit } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { onShutdownSignal } from '../shared/shutdown.js';
import { workerKinds } from './registry.js';
import { startWorkers } from './start-workers.js';
import { announce } from '../shared/announce.js';
import { startTracing } from '../shared/tracing/tracing.js';

const config = loadConfigOrExit();
const tracing = startTracing('connect-workers');
const logger = createLogger(config.service.logLevel, 'connect-workers');
const names = config.workers.kinds.length > 0 ? config.workers.kinds : Object.keys(workerKinds);
const unknown = names.filter((n) => !(n in workerKinds));
if (unknown.length > 0) {
  process.stderr.write(
    `invalid configuration: WORKERS=${JSON.stringify(config.workers.kinds.join(','))}: unknown kind(s) ${unknown.join(', ')}; ` +
      `known: ${Object.keys(workerKinds).join(', ') || '(none)'}\n`,
  );
  process.exit(78);
}
try {
  const workers = await startWorkers({
    config,
    logger,
    kinds: names.map((n) => workerKinds[n]!),
    // Before Kafka is waited for: /livez answers while a worker waits for the broker.
    serve: { onListening: (url) => announce('connect-workers', `workers: metrics on ${url}`, { url }) },
  });
  announce('connect-workers', `workers: running ${names.join(', ') || '(no kinds registered)'}`);
  onShutdownSignal(logger, config.service.shutdownTimeoutMs, async () => {
    await workers.stop();
    await tracing.shutdown(); // buffered spans leave before the process does
  });
} catch (err) {
  logger.fatal({ err }, 'workers failed to start');
  process.stderr.write(`workers: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
}
