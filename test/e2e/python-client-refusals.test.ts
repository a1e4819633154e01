import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { accessToken, bearerToken } from './oauth-helpers.js';
import { bearer, createClientWithKey, insertFinishedImportJob } from '../support/fixtures.js';
import { scaled } from '../support/time-scale.js';
import { useGatewaySuite } from '../support/suite.js';

// Issues 41 and 53: a refusal must be readable by a client that writes its whole body before it
// reads the answer, as Python's http.client (and requests, on top of it) does, also when it
// repeats the mistake one request after another, at the default settings (no quota raised).
// Ten 10 MB bodies to an operation that takes 1 MiB, and ten with an unknown key, one after the
// other: each attempt reads its 413 / 401. The discarded bytes are charged to the upload quota
// (4 MiB/s per client, windows of 16 MiB): from the second body on the quota has no room for
// the whole of it, and the gateway reads the rest at the quota's rate instead of closing.
const suite = useGatewaySuite();

const script = fileURLToPath(new URL('../support/python-post.py', import.meta.url));
const fetchScript = fileURLToPath(new URL('../support/node-fetch-post.mjs', import.meta.url));
const jobsPath = '/api/v1/connect/jobs';
const bodyBytes = 10 * 1000 * 1000;
const attempts = 10;
/** Ten bodies at the quota's rate take about 25 s on an idle machine. */
const testTimeout = scaled(180_000);

type Attempt = { status?: number; code?: string | null; error?: string };

async function pythonPosts(headers: Record<string, string>): Promise<Attempt[]> {
  const { stdout } = await promisify(execFile)(
    'python3',
    [script, new URL(jobsPath, suite.gateway.url).href, String(bodyBytes), String(attempts), JSON.stringify(headers)],
    { timeout: testTimeout },
  );
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Attempt);
}

describe("Python's http.client, writing 10 MB bodies one after another before reading the answer (default quotas)", () => {
  it(
    'reads 413 payload_too_large in 10 of 10 attempts',
    async () => {
      const { apiKey } = await createClientWithKey(suite.pool, suite.demo.tenantId, 'connect.jobs.write');
      const results = await pythonPosts(bearer(apiKey));
      expect(results).toEqual(Array.from({ length: attempts }, () => ({ status: 413, code: 'payload_too_large' })));
    },
    testTimeout,
  );

  it(
    'reads 401 invalid_credential for an unknown key in 10 of 10 attempts',
    async () => {
      const { apiKey } = await createClientWithKey(suite.pool, suite.demo.tenantId, 'connect.jobs.write');
      const unknown = apiKey.slice(0, -4) + (apiKey.endsWith('AAAA') ? 'BBBB' : 'AAAA');
      const results = await pythonPosts(bearer(unknown));
      expect(results).toEqual(Array.from({ length: attempts }, () => ({ status: 401, code: 'invalid_credential' })));
    },
    testTimeout,
  );
});

describe("Node's fetch in its own process, a 10 MB field sent to one route after another (default quotas)", () => {
  it(
    'reads 413 payload_too_large from each route in turn',
    async () => {
      const client = suite.demo.clients.all!;
      const jobId = await insertFinishedImportJob(suite.pool, { tenantId: suite.demo.tenantId, ...client });
      const token = await accessToken(suite.api, client);
      const suggestion = {
        path: `/api/v1/import-jobs/${jobId}/route-suggestion`,
        headers: bearer(client.apiKey),
        field: 'day',
        bytes: bodyBytes,
      };
      const appointment = {
        path: '/connect/v1/appointment-requests',
        headers: bearerToken(token),
        field: 'notes',
        bytes: bodyBytes,
      };
      const requests = [suggestion, appointment, suggestion, appointment, suggestion, appointment];
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [fetchScript, suite.gateway.url, JSON.stringify(requests)],
        { timeout: testTimeout },
      );
      const answers = stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Attempt);
      expect(answers).toEqual(requests.map(() => ({ status: 413, code: 'payload_too_large' })));
    },
    testTimeout,
  );
});
