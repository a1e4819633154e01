// Gateway process entry point: `node dist/gateway/server.js` (or `npm run gateway`).
import { loadConfigOrExit } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { onShutdownSignal } from '../shared/shutdown.js';
import { announce } from '../shared/announce.js';
import { startGateway } from './gateway.js';

const config = loadConfigOrExit();
const logger = createLogger(config.logLevel, 'connect-gateway');
try {
  const gateway = await startGateway(config, logger);
  announce('connect-gateway', `gateway: listening on ${gateway.url}`, { url: gateway.url });
  onShutdownSignal(logger, config.shutdownTimeoutMs, gateway.stop);
} catch (err) {
  logger.fatal({ err }, 'gateway failed to start');
  process.stderr.write(`gateway: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
}
