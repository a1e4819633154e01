import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool } from '../../src/shared/db/pool.js';
import { serviceVersion } from '../../src/shared/version.js';
import { dropDatabase } from '../support/database.js';
import { bearer, createDemo, type Demo } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { makeTargets } from '../support/targets.js';
import { trickledUpload } from '../support/trickled-upload.js';
import { scaled } from '../support/time-scale.js';
import { containerLines, dockerDown, dockerOk, dockerUp, madeBy, notJson, runWith, type Docker } from './docker.js';
import { documentedStopTimeoutSeconds } from './grace.js';

// Issue 30: the Docker path, as a user meets it. Builds the image (on a stand-in of its base where
// that cannot be pulled: scripts/image-base), then runs its three processes as containers against
// the suite's Kafka broker and a fresh database of the suite's PostgreSQL server, with the flags
// docs/deployment.md gives. Run by `npm run test:image` (CONNECT_IMAGE_TEST=1), which CI runs after
// `npm test`; skipped, with the reason, elsewhere and where no Docker daemon can be had.
const setup: Docker | { skip: string } =
  process.env.CONNECT_IMAGE_TEST === '1' ? dockerUp() : { skip: 'run by `npm run test:image`, not by `npm test`' };
const skip = 'skip' in setup ? setup.skip : '';
if (skip) console.warn(`image test: skipped: ${skip}`);
const docker = setup as Docker;

const run = randomBytes(4).toString('hex');
const image = `connect-integration-service:image-test-${run}`;
const made: string[] = []; // container ids, removed at the end
const hardened = ['--network', 'host', '--read-only', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges'];
const dbName = `connect_image_${run}`;
const server = new URL(inject('templateDatabaseUrl'));
const databaseUrl = Object.assign(new URL(server), { pathname: `/${dbName}` }).toString();
const appEnv = [
  ['DATABASE_URL', databaseUrl],
  ['KAFKA_BROKERS', inject('kafkaBrokers')],
  ['KAFKA_TOPIC_PREFIX', `image-${run}.`],
  ['LOG_LEVEL', 'info'],
].flatMap(([k, v]) => ['-e', `${k}=${v}`]);

/** docker run -d with this run's name and label; the container id. */
async function start(name: string, args: string[]): Promise<string> {
  const id = await dockerOk(docker, [
    'run',
    '-d',
    '--name',
    `connect-image-${run}-${name}`,
    '--label',
    madeBy,
    ...args,
  ]);
  made.push(id);
  return id;
}

/** The first JSON log line of a container whose msg starts with `prefix` (polled). */
const logged = (id: string, prefix: string, what: string) =>
  eventually(
    async () => {
      for (const line of await containerLines(docker, id)) {
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg?.startsWith(prefix)) return entry;
      }
      return undefined;
    },
    120_000,
    what,
  );

const waitExit = async (id: string) => Number(await dockerOk(docker, ['wait', id]));

describe.skipIf(skip !== '')(`the image${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let gateway: { id: string; url: string };
  let worker: string;
  let demo: Demo;

  beforeAll(async () => {
    // Leftovers of a run that died, on a daemon of our own only (on a shared one, they may be a
    // concurrent run's): containers and images carrying our label.
    if (docker.ownDaemon) {
      const list = async (args: string[]) => (await dockerOk(docker, args)).split('\n').filter(Boolean);
      const containers = await list(['ps', '-aq', '--filter', `label=${madeBy}`]);
      if (containers.length > 0) await dockerOk(docker, ['rm', '-f', ...containers]);
      const images = await list(['images', '-q', '--filter', `label=${madeBy}`]);
      if (images.length > 0) await dockerOk(docker, ['rmi', '-f', ...new Set(images)]);
    }
    let t = performance.now();
    const base = await runWith(docker, 'scripts/image-base', [], true);
    expect(base.code, 'scripts/image-base').toBe(0);
    const baseMs = performance.now() - t;
    t = performance.now();
    const build = await runWith(docker, 'scripts/image-build', [
      '--network',
      'host', // the daemon has no bridge; npm ci reaches the registry through the host
      '--build-arg',
      `NODE_IMAGE=${base.stdout.trim()}`,
      '--label',
      madeBy,
      '-t',
      image,
    ]);
    expect(build.code, build.stderr.slice(-4000)).toBe(0);
    const buildMs = performance.now() - t;
    const bytes = Number(await dockerOk(docker, ['image', 'inspect', '--format', '{{.Size}}', image]));
    const label = await dockerOk(docker, [
      'image',
      'inspect',
      '--format',
      '{{index .Config.Labels "org.opencontainers.image.version"}}',
      image,
    ]);
    expect(label.trim()).toBe(serviceVersion);
    console.log(
      `image test: base ${base.stdout.trim()} ready in ${(baseMs / 1000).toFixed(1)} s; ` +
        `image built in ${(buildMs / 1000).toFixed(1)} s; image size ${(bytes / 1e6).toFixed(0)} MB`,
    );
  }, scaled(900_000));

  afterAll(async () => {
    if (made.length > 0) await runWith(docker, docker.cli, ['rm', '-f', ...made]);
    await runWith(docker, docker.cli, ['rmi', image]);
    await dropDatabase(Object.assign(new URL(server), { pathname: '/postgres' }).toString(), dbName);
    dockerDown(docker);
  }, scaled(180_000));

  it('migrates a fresh database, and says up to date the second time', async () => {
    const said: string[] = [];
    for (const round of [1, 2]) {
      const id = await start(`migrate-${round}`, [
        ...hardened,
        ...appEnv,
        image,
        'node',
        'dist/shared/db/migrate-cli.js',
      ]);
      expect(await waitExit(id), (await containerLines(docker, id)).join('\n')).toBe(0);
      said.push(...(await containerLines(docker, id)).map((line) => (JSON.parse(line) as { msg: string }).msg));
    }
    expect(said[0]).toMatch(/^migrations: applied 0001_/);
    expect(said.at(-1)).toBe('migrations: up to date');
  });

  it('runs the gateway and a worker read-only as uid 1000, and completes a batch', async () => {
    const longRunning = [...hardened, '--tmpfs', '/tmp', '--stop-timeout', String(documentedStopTimeoutSeconds())];
    const gatewayId = await start('gateway', [
      ...longRunning,
      ...appEnv,
      '-e',
      'HOST=127.0.0.1',
      '-e',
      'PORT=0',
      image,
    ]);
    worker = await start('worker', [
      ...longRunning,
      ...appEnv,
      '-e',
      'WORKER_HTTP_PORT=0',
      '-e',
      'WORKER_HEARTBEAT_FILE=/tmp/worker-alive',
      image,
      'node',
      'dist/workers/runner.js',
    ]);
    const listening = await logged(gatewayId, 'gateway: listening', 'the gateway listening');
    gateway = { id: gatewayId, url: listening.url! };
    await logged(worker, 'workers: running', 'the worker running');

    for (const id of [gatewayId, worker]) {
      expect(await dockerOk(docker, ['exec', id, 'id', '-u'])).toBe('1000');
      const write = await runWith(docker, docker.cli, ['exec', id, 'sh', '-c', 'echo x > /app/probe']);
      expect(write.stderr).toMatch(/Read-only file system/);
      expect((await runWith(docker, docker.cli, ['exec', id, 'sh', '-c', 'echo x > /tmp/probe'])).code).toBe(0);
    }
    expect(await dockerOk(docker, ['image', 'inspect', '--format', '{{.Config.User}}', image])).toBe('1000:1000');

    const pool = createPool(databaseUrl, 2, 'test');
    try {
      demo = await createDemo(pool);
    } finally {
      await pool.end();
    }
    const headers = { ...bearer(demo.clients.all!.apiKey), 'content-type': 'application/json' };
    const sent = await fetch(`${gateway.url}/api/v1/inbound/targets/batch`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ sourceSystem: 'image-test', targets: makeTargets(10, 'image') }),
    });
    const accepted = (await sent.json()) as { importJobId: string };
    expect(sent.status, JSON.stringify(accepted)).toBe(200);
    await eventually(
      async () => {
        const job = await fetch(`${gateway.url}/api/v1/import-jobs/${accepted.importJobId}`, { headers });
        return ((await job.json()) as { status: string }).status === 'Completed' ? true : undefined;
      },
      120_000,
      'the batch Completed',
    );

    // The image carries the uploader in one file (npm run build) and its gateway serves it.
    const download = await fetch(`${gateway.url}/downloads/connect-push.mjs`);
    const script = Buffer.from(await download.arrayBuffer());
    expect(download.status).toBe(200);
    expect(script.toString('utf8', 0, 20)).toBe('#!/usr/bin/env node\n');
    expect(download.headers.get('x-checksum-sha256')).toBe(createHash('sha256').update(script).digest('hex'));
  });

  it('stops the gateway and the worker with exit 0, an upload still trickling in past Docker’s default grace', async () => {
    // The upload outlasts docker stop's default 10 s (which would kill the gateway: exit 137) and
    // stays within SHUTDOWN_TIMEOUT_MS (15 s), after which the gateway gives up (exit 1).
    const body = new TextEncoder().encode(
      JSON.stringify({ sourceSystem: 'image-test-trickle', targets: makeTargets(5, 'trickle') }),
    );
    const pieces = 44;
    const upload = trickledUpload(
      `${gateway.url}/api/v1/inbound/targets/batch`,
      { ...bearer(demo.clients.all!.apiKey), 'content-type': 'application/json' },
      body,
      { durationMs: 11_000, pieces },
    );
    await eventually(() => (upload.sent() >= 2 ? true : undefined), 30_000, 'the upload under way');

    // Plain `docker stop`: the containers' own --stop-timeout (the documented one) applies.
    const stopped = Promise.all([gateway.id, worker].map((id) => dockerOk(docker, ['stop', id])));
    const answer = await upload.answer;
    await stopped;
    expect(upload.sent()).toBe(pieces);
    expect(answer.status, answer.text).toBe(200);
    for (const id of [gateway.id, worker]) {
      const state = await dockerOk(docker, ['inspect', '--format', '{{.State.ExitCode}} {{.State.OOMKilled}}', id]);
      expect(state, (await containerLines(docker, id)).slice(-5).join('\n')).toBe('0 false');
    }
  });

  it('logged JSON lines only, from every container', async () => {
    expect(made.length).toBe(4); // two migrations, the gateway, the worker
    for (const id of made) {
      const lines = await containerLines(docker, id);
      expect(lines.length, id).toBeGreaterThan(0);
      expect(notJson(lines), id).toEqual([]);
    }
  });
});
