// `npm run migrate`: create the database if missing and apply pending migrations.
import { loadConfigOrExit } from '../config.js';
import { ensureDatabase, migrateUp } from './migrate.js';

const config = loadConfigOrExit();
try {
  await ensureDatabase(config.databaseUrl);
  const applied = await migrateUp(config.databaseUrl);
  process.stdout.write(`migrations: ${applied.length === 0 ? 'up to date' : `applied ${applied.join(', ')}`}\n`);
} catch (err) {
  process.stderr.write(`migrations failed: ${(err as Error).message}\n`);
  process.exit(1);
}
