import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { bearer, createClientWithKey } from '../support/fixtures.js';
import { scaled } from '../support/time-scale.js';
import { useGatewaySuite } from '../support/suite.js';

// Issue 41: a refusal must be readable by a client that writes its whole body before it reads
// the answer, as Python's http.client (and requests, on top of it) does. Ten 10 MB bodies to an
// operation that takes 1 MiB, and ten with an unknown key: each attempt reads its 413 / 401.
// The upload quotas are raised so that ten back-to-back 10 MB bodies fit (the drained bytes are
// charged to them; refused-bodies.test.ts covers what happens past a quota).
const suite = useGatewaySuite({
  env: () => ({
    BODY_LIMIT_BYTES: String(1024 * 1024),
    UPLOAD_BYTES_PER_SECOND: String(512 * 1024 * 1024),
    UPLOAD_BYTES_PER_SECOND_PER_TENANT: String(512 * 1024 * 1024),
  }),
});

const script = fileURLToPath(new URL('../support/python-post.py', import.meta.url));
const jobsPath = '/api/v1/connect/jobs';
const bodyBytes = 10 * 1000 * 1000;
const attempts = 10;

type Attempt = { status?: number; code?: string | null; error?: string };

async function pythonPosts(headers: Record<string, string>): Promise<Attempt[]> {
  const { stdout } = await promisify(execFile)(
    'python3',
    [script, new URL(jobsPath, suite.gateway.url).href, String(bodyBytes), String(attempts), JSON.stringify(headers)],
    { timeout: scaled(120_000) },
  );
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Attempt);
}

describe("Python's http.client, writing a 10 MB body before reading the answer", () => {
  it('reads 413 payload_too_large in 10 of 10 attempts', async () => {
    const { apiKey } = await createClientWithKey(suite.pool, suite.demo.tenantId, 'connect.jobs.write');
    const results = await pythonPosts(bearer(apiKey));
    expect(results).toEqual(Array.from({ length: attempts }, () => ({ status: 413, code: 'payload_too_large' })));
  });

  it('reads 401 invalid_credential for an unknown key in 10 of 10 attempts', async () => {
    const { apiKey } = await createClientWithKey(suite.pool, suite.demo.tenantId, 'connect.jobs.write');
    const unknown = apiKey.slice(0, -4) + (apiKey.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const results = await pythonPosts(bearer(unknown));
    expect(results).toEqual(Array.from({ length: attempts }, () => ({ status: 401, code: 'invalid_credential' })));
  });
});
