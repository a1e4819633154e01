import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/logger.js';
import { generateWebhookSecret, signWebhook } from '../../src/shared/webhooks/signing.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { startWorkers } from '../../src/workers/start-workers.js';
import { webhookDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { bearer, createClientWithKey } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { scaled } from '../support/time-scale.js';

// Issue 41: the integrators' examples (docs/examples/) run as child processes, python3 and
// `java ConnectExample.java`, against the real gateway, inbound workers and webhook dispatcher.
// Each pushes a batch, polls its import job, receives the webhook the dispatcher delivers to the
// receiver it starts (refusing two forged ones first) and reads the event feed from a cursor.
// Between the example and the gateway a proxy answers each client's first push 429 with
// Retry-After: 1, so that the retry is exercised; everything else passes through unchanged.
// A missing python3 or java fails the test (spawn error): both are required, nothing is skipped.

const suite = useGatewaySuite({
  env: () => ({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_INTERVAL_MS: '100' }),
  workers: [inboundWorker, inboundExpressWorker],
});

const examples = fileURLToPath(new URL('../../docs/examples/', import.meta.url));
const batchPath = '/api/v1/inbound/targets/batch';

type Push = { authorization: string; key: string; body: string; status: number; at: number };
const pushes: Push[] = [];
let proxy: http.Server;
let proxyUrl: string;

beforeAll(async () => {
  const upstream = new URL(suite.gateway.url);
  proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const authorization = req.headers.authorization ?? '';
      const isPush = req.method === 'POST' && req.url === batchPath;
      const push = (status: number) =>
        pushes.push({
          authorization,
          key: String(req.headers['idempotency-key']),
          body: body.toString(),
          status,
          at: Date.now(),
        });
      if (isPush && !pushes.some((p) => p.authorization === authorization)) {
        push(429);
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(JSON.stringify({ error: { code: 'rate_limited', message: 'injected by the test proxy' } }));
        return;
      }
      const forwarded = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          if (isPush) push(answer.statusCode!);
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        },
      );
      forwarded.on('error', () => res.destroy());
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => proxy?.close(resolve));
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A webhook POSTed to the example's receiver; its status. */
async function postWebhook(port: number, headers: Record<string, string>, body: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/hooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

async function runExample(command: string, args: string[]) {
  const scopes = 'inbound.targets.batch.write,import_jobs.read,events.read,webhooks.manage';
  const client = await createClientWithKey(suite.pool, suite.demo.tenantId, scopes);
  const port = await freePort();
  const endpoint = await suite.api.post('/api/v1/webhook-endpoints', {
    body: { url: `http://127.0.0.1:${port}/hooks`, events: ['import_job.completed'] },
    headers: bearer(client.apiKey),
  });
  expect(endpoint.status, endpoint.text).toBe(201);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'connect-example-'));
  const cursorFile = path.join(dir, 'events.cursor');

  let stdout = '';
  let stderr = '';
  const child = spawn(command, args, {
    cwd: dir,
    env: {
      ...process.env,
      CONNECT_BASE_URL: proxyUrl,
      CONNECT_API_KEY: client.apiKey,
      CONNECT_WEBHOOK_SECRET: endpoint.body.secret,
      CONNECT_WEBHOOK_PORT: String(port),
      CONNECT_CURSOR_FILE: cursorFile,
      CONNECT_TIMEOUT: String(scaled(20_000) / 1000),
    },
  });
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', (err) =>
      reject(new Error(`${command} could not be started (required by this test): ${err.message}`)),
    );
    child.on('close', (code) => resolve(code));
  });
  exited.catch(() => undefined); // awaited below; a spawn error must not surface as unhandled first
  let dispatcher: Awaited<ReturnType<typeof startWorkers>> | undefined;
  try {
    const said = () => `${command} to say its receiver listens; stdout: ${stdout} stderr: ${stderr}`;
    await Promise.race([
      exited.then(() => undefined),
      eventually(() => (stdout.includes(`webhooks: listening on port ${port}`) ? true : undefined), 30_000, said),
    ]);
    expect(stdout, stderr).toContain(`webhooks: listening on port ${port}`);

    // Before the dispatcher runs: a webhook signed with another secret, and a real signature
    // over another body, are refused.
    const body = JSON.stringify({ id: 'evt_01JZZZZZZZZZZZZZZZZZZZZZZZ', type: 'import_job.completed', data: {} });
    const forged = signWebhook('evt_01JZZZZZZZZZZZZZZZZZZZZZZZ', new Date(), body, [generateWebhookSecret()]);
    expect(await postWebhook(port, forged, body)).toBe(401);
    const signed = signWebhook('evt_01JZZZZZZZZZZZZZZZZZZZZZZZ', new Date(), body, [endpoint.body.secret]);
    expect(await postWebhook(port, signed, body.replace('{}', '{"importJobId":1}'))).toBe(401);

    dispatcher = await startWorkers({
      config: suite.config,
      logger: createLogger('warn', 'test-examples'),
      kinds: [webhookDispatcher],
    });
    const code = await Promise.race([
      exited,
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error(`${command} did not exit; stdout: ${stdout} stderr: ${stderr}`)),
          scaled(30_000),
        ),
      ),
    ]);
    expect(code, `stdout: ${stdout}\nstderr: ${stderr}`).toBe(0);
    const out = {
      stdout,
      cursor: (await readFile(cursorFile, 'utf8')).trim(),
      client,
      endpointId: endpoint.body.endpointId as string,
    };
    // The attempt is recorded after the receiver answered (the example may exit first).
    const event = /^webhook (evt_\S+) import_job\.completed: signature verified$/m.exec(stdout)?.[1];
    expect(event, stdout).toBeDefined();
    await eventually(
      async () => {
        const { rows } = await suite.pool.query(
          `SELECT 1 FROM webhook_attempts WHERE event_id = $1 AND endpoint_id = $2 AND outcome = 'Succeeded'
           AND status_code = 204`,
          [event, out.endpointId],
        );
        return rows.length === 1 ? true : undefined;
      },
      10_000,
      'the delivery to the example recorded as succeeded',
    );
    return out;
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await dispatcher?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function expectWorked(run: Awaited<ReturnType<typeof runExample>>) {
  const { stdout, client } = run;
  expect((stdout.match(/: signature not valid, refused$/gm) ?? []).length, stdout).toBe(2);

  // 1. The push: refused once (429 from the proxy), sent again after Retry-After, same key and bytes.
  const pushed = /^pushed: import job (\d+) \w+ \(Idempotency-Key (\S+)\)$/m.exec(stdout);
  expect(pushed, stdout).not.toBeNull();
  const [, jobId, key] = pushed!;
  expect(stdout).toMatch(/^POST \/api\/v1\/inbound\/targets\/batch: 429, retrying after 1 s$/m);
  const mine = pushes.filter((p) => p.authorization === `Bearer ${client.apiKey}`);
  expect(mine.map((p) => p.status)).toEqual([429, 200]);
  expect(mine[1]!.key).toBe(key);
  expect(mine[1]!.key).toBe(mine[0]!.key);
  expect(mine[1]!.body).toBe(mine[0]!.body);
  expect(mine[1]!.at - mine[0]!.at).toBeGreaterThanOrEqual(1000); // it waited for Retry-After

  // 2. The import job, as the example saw it and as recorded.
  expect(stdout).toContain(`import job ${jobId}: Completed received=3 accepted=3 rejected=0 applied=3 failed=0`);
  const { rows: jobs } = await suite.pool.query(
    `SELECT status, client_id, idempotency_key, received_count, applied_count, failed_count FROM import_jobs WHERE id = $1`,
    [jobId],
  );
  expect(jobs).toEqual([
    {
      status: 'Completed',
      client_id: client.clientId,
      idempotency_key: `header:${key}`, // as recorded: the header's key
      received_count: 3,
      applied_count: 3,
      failed_count: 0,
    },
  ]);
  const { rows: targets } = await suite.pool.query(
    `SELECT count(*)::int AS n FROM targets WHERE tenant_id = $1 AND source_system = $2`,
    [suite.demo.tenantId, /Idempotency-Key (\w+)-example/.exec(stdout)![1] + '-example'],
  );
  expect(targets[0].n).toBe(3);

  // 3. The webhook the dispatcher delivered: the job's event, verified by the example.
  const eventId = /^webhook (evt_\S+) import_job\.completed: signature verified$/m.exec(stdout)![1]!;
  const { rows: events } = await suite.pool.query(`SELECT client_id, type, body FROM webhook_events WHERE id = $1`, [
    eventId,
  ]);
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({ client_id: client.clientId, type: 'import_job.completed' });
  expect(JSON.parse(events[0].body).data.importJobId).toBe(Number(jobId));

  // 4. The feed: the client's one event, and the cursor stored is the feed's end.
  expect(stdout).toContain(`feed: ${eventId} import_job.completed`);
  const end = /^feed: 1 events, next (\S+) stored in /m.exec(stdout);
  expect(end, stdout).not.toBeNull();
  expect(run.cursor).toBe(end![1]);
  const after = await suite.api.get(`/api/v1/events?after=${run.cursor}`, { headers: bearer(client.apiKey) });
  expect(after.status).toBe(200);
  expect(after.body).toMatchObject({ events: [], next: run.cursor, hasMore: false });
}

describe('the integrators’ examples (docs/examples) against the real stack', () => {
  it('Python, standard library only', async () => {
    await expectWorked(await runExample('python3', [path.join(examples, 'python', 'connect_example.py')]));
  });

  it('Java 17, `java ConnectExample.java`', async () => {
    await expectWorked(await runExample('java', [path.join(examples, 'java', 'ConnectExample.java')]));
  });
});
