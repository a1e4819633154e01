// Gateway process entry point: `node dist/gateway/server.js` (or `npm run gateway`).
import { loadConfigOrExit } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { onShutdownSignal } from '../shared/shutdown.js';
import { announce } from '../shared/announce.js';
import { startTracing } from '../shared/tracing/tracing.js';
import { startGateway } from './gateway.js';

const config = loadConfigOrExit();
const tracing = startTracing('connect-gateway');
const logger = createLogger(config.service.logLevel, 'connect-gateway');
try {
  const gateway = await startGateway(config, logger);
  announce('connect-gateway', `gateway: listening on ${gateway.url}`, { url: gateway.url });
  // Spans still buffered for the exporter leave before the process does.
  onShutdownSignal(logger, config.service.shutdownTimeoutMs, async () => {
    await gateway.stop();
    await tracing.shutdown();
  });
} catch (err) {
  logger.fatal({ err }, 'gateway failed to start');
  process.stderr.write(`gateway: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
}
