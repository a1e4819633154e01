import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { ensureDatabase, migrateUp } from '../../src/shared/db/migrate.js';
import { alive, buildService, removeServiceBuild } from '../support/service-build.js';

// Where the real Kafka and PostgreSQL come from: KAFKA_BROKERS and DATABASE_URL from the
// environment, else the project's own broker (scripts/kafka: the one Kafka version the project
// runs everywhere, from Maven jars) and the local PostgreSQL server.
// A migrated template database is made once; each test file clones its own from it.

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    templateDatabaseUrl: string;
  }
}

// One template per checkout and run, so concurrent runs (two work trees, or two runs in one) never
// drop each other's; a run's template goes at its end, those of runs that died at the next start.
const templatePrefix = `connect_test_tpl_${createHash('sha1').update(process.cwd()).digest('hex').slice(0, 8)}_`;
const templateName = `${templatePrefix}${process.pid}`;

function fromLocalStack() {
  execFileSync('scripts/kafka', ['up'], { stdio: 'inherit' });
  return {
    brokers: process.env.KAFKA_BROKERS ?? `127.0.0.1:${process.env.KAFKA_PORT ?? 9092}`,
    databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect',
    stop: async () => undefined, // left running: the next run reuses it (scripts/stack down stops it)
  };
}

export default async function setup(project: TestProject) {
  // dist/connect-push.mjs, which the gateway serves (and test/e2e/connect-push.test.ts runs), from
  // the sources under test: a quarter of a second.
  execFileSync(process.execPath, ['scripts/build-push.mjs'], { stdio: 'inherit' });
  // The service's processes run compiled (test/support/service-build.ts); the test files'
  // processes inherit where from the environment, as they do the time scale.
  const serviceBuild = await buildService(process.cwd());
  process.env.CONNECT_TEST_BUILD = serviceBuild;
  const env = process.env;
  const source =
    env.KAFKA_BROKERS && env.DATABASE_URL
      ? { brokers: env.KAFKA_BROKERS, databaseUrl: env.DATABASE_URL, stop: async () => undefined }
      : fromLocalStack();

  const template = new URL(source.databaseUrl);
  template.pathname = `/${templateName}`;
  const admin = new URL(source.databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  const { rows } = await client.query('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [
    templatePrefix,
  ]);
  for (const { datname } of rows as { datname: string }[]) {
    const pid = Number(datname.slice(templatePrefix.length));
    if (pid === process.pid || !alive(pid)) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  }
  await client.end();
  await ensureDatabase(template.toString());
  await migrateUp(template.toString());

  project.provide('kafkaBrokers', source.brokers);
  project.provide('templateDatabaseUrl', template.toString());
  return async () => {
    const admin2 = new pg.Client({ connectionString: admin.toString() });
    await admin2.connect();
    await admin2.query(`DROP DATABASE IF EXISTS ${templateName} WITH (FORCE)`).catch(() => undefined);
    await admin2.end();
    removeServiceBuild(process.cwd(), serviceBuild);
    await source.stop();
  };
}
