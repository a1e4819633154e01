// Gateway process entry point: `node dist/gateway/server.js` (or `npm run gateway`).
import { loadConfigOrExit } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { onShutdownSignal } from '../shared/shutdown.js';
import { startGateway } from './gateway.js';

const config = loadConfigOrExit();
const logger = createLogger(config.logLevel, 'connect-gateway');
try {
  const gateway = await startGateway(config, logger);
  logger.info({ url: gateway.url }, 'gateway listening');
  process.stdout.write(`gateway: listening on ${gateway.url}\n`);
  onShutdownSignal(logger, config.shutdownTimeoutMs, gateway.stop);
} catch (err) {
  logger.fatal({ err }, 'gateway failed to start');
  process.stderr.write(`gateway: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
}
