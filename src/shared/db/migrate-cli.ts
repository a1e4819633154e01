// `npm run migrate`: create the database if missing and apply pending migrations. Logs JSON (pino)
// like every other process, so a container's or job's log holds JSON only.
import { loadConfigOrExit } from '../config.js';
import { createLogger } from '../logger.js';
import { ensureDatabase, migrateUp } from './migrate.js';

const config = loadConfigOrExit();
const logger = createLogger(config.service.logLevel, 'connect-migrate');
try {
  await ensureDatabase(config.database.url);
  const applied = await migrateUp(config.database.url);
  logger.info({ applied }, `migrations: ${applied.length === 0 ? 'up to date' : `applied ${applied.join(', ')}`}`);
} catch (err) {
  logger.error({ err }, `migrations failed: ${(err as Error).message}`);
  // pino writes synchronously to stdout (no transport), so nothing is lost by exiting here.
  process.exit(1);
}
