import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationScopes } from '../../src/shared/scopes.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { createClientWithKey } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';

// The bulk uploader (src/push) against the real stack: a file of 100,000 targets, some invalid,
// the uploader SIGKILLed midway and run again; every valid target stored once, every reject listed.

const batchTargets = 2000; // 50 batches: enough for a kill to land midway
const suite = useGatewaySuite({
  env: () => ({ INBOUND_BATCH_MAX_TARGETS: String(batchTargets) }),
  workers: [inboundWorker, inboundExpressWorker],
});

const sourceSystem = 'push-e2e';
/** Both runs take 17 s alone; inside the full suite on two shared cores one took over 66 s (the
 * default test timeout). The second run waits for the workers with no bound of its own, so this
 * one is what fails a hang: five times the slowest seen. */
const pushTimeoutMs = scaled(330_000);
const total = 100_000;
/** Targets the schema refuses: no place at all, or a priority out of range. */
const invalid = (i: number) => i % 1000 === 7 || i % 5000 === 123;
/** Lines that are not JSON, after these target indexes. */
const garbageAfter = [10, 25_000, 50_001, 75_002, 99_990];

let dir: string;
let file: string;
const valid = new Set<string>();
const invalidIds = new Set<string>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'connect-push-'));
  file = join(dir, 'targets.ndjson');
  const lines: string[] = [];
  makeTargets(total, 'push').forEach((target, i) => {
    const t: Record<string, unknown> = { ...target };
    if (i % 1000 === 7) {
      delete t.address;
      delete t.coordinates;
    }
    if (i % 5000 === 123) t.priority = 9;
    (invalid(i) ? invalidIds : valid).add(target.externalId);
    lines.push(JSON.stringify(t));
    if (garbageAfter.includes(i)) lines.push(`{"externalId": "broken-${i}", oops`);
  });
  await writeFile(file, `${lines.join('\n')}\n`);
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

type Run = { child: ChildProcess; stdout: () => string; exit: Promise<{ code: number | null; signal: string | null }> };

function runUploader(...args: string[]): Run {
  const child = spawn(
    process.execPath,
    ['bin/connect-push.mjs', ...(args[0] === '-' ? [] : [file]), '--plain', ...args],
    {
      env: {
        ...process.env,
        CONNECT_URL: suite.gateway.url,
        CONNECT_API_KEY: suite.demo.clients.all!.apiKey,
        CONNECT_SOURCE_SYSTEM: sourceSystem,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, exit };
}

const jobCount = async () =>
  Number(
    (await suite.pool.query(`SELECT count(*) AS n FROM import_jobs WHERE source_system = $1`, [sourceSystem])).rows[0]
      .n,
  );

describe('connect-push', () => {
  it(
    'pushes 100,000 targets, killed midway and run again: each valid target stored once, each reject listed',
    async () => {
      const started = Date.now();
      const expectedBatches = Math.ceil(total / batchTargets);
      const first = runUploader();
      // Kill it once a fifth of the batches are recorded: mid-file, with batches in flight.
      const atKill = await eventually(
        async () => {
          const n = await jobCount();
          return n >= expectedBatches / 5 ? n : undefined;
        },
        scaled(120_000), // 6 s alone
        'the first run to record a fifth of the batches',
      );
      first.child.kill('SIGKILL');
      expect(await first.exit).toEqual({ code: null, signal: 'SIGKILL' });
      const recordedAtKill = await jobCount();
      expect(recordedAtKill, `first run: ${first.stdout()}`).toBeLessThan(expectedBatches);
      console.log(
        `connect-push e2e: killed after ${((Date.now() - started) / 1000).toFixed(1)} s, ${atKill}-${recordedAtKill} of ${expectedBatches} batches recorded`,
      );

      const second = runUploader('--wait');
      const { code } = await second.exit;
      const output = second.stdout();
      console.log(`connect-push e2e: both runs ${((Date.now() - started) / 1000).toFixed(1)} s\n${output}`);
      expect(code, output).toBe(1); // something was rejected
      expect(output).toMatch(/already sent by an earlier run/);
      expect(output).toContain(`${valid.size.toLocaleString('en-US')} accepted`);
      expect(output).toContain(`applied ${valid.size.toLocaleString('en-US')}, failed in the workers 0`);

      // Every valid target stored, exactly once (one row per key; no batch recorded twice).
      const { rows } = await suite.pool.query(`SELECT external_id FROM targets WHERE source_system = $1`, [
        sourceSystem,
      ]);
      const stored = rows.map((r: { external_id: string }) => r.external_id);
      expect(stored.length).toBe(valid.size);
      expect(new Set(stored)).toEqual(valid);
      const jobs = (
        await suite.pool.query(
          `SELECT count(*)::int AS jobs, count(DISTINCT idempotency_key)::int AS keys, sum(received_count)::int AS received,
                sum(accepted_count)::int AS accepted, sum(applied_count)::int AS applied
           FROM import_jobs WHERE source_system = $1`,
          [sourceSystem],
        )
      ).rows[0];
      expect(jobs).toEqual({
        jobs: expectedBatches,
        keys: expectedBatches,
        received: total,
        accepted: valid.size,
        applied: valid.size,
      });

      // The rejects file: every invalid target and every unreadable line, with reasons, nothing else.
      const rejects = (await readFile(`${file}.rejects.ndjson`, 'utf8'))
        .trim()
        .split('\n')
        .map(
          (l) =>
            JSON.parse(l) as { line: number; externalId: string | null; reasons: { message: string }[]; raw?: string },
        );
      const rejectedIds = rejects.filter((r) => r.externalId !== null).map((r) => r.externalId);
      expect(new Set(rejectedIds)).toEqual(invalidIds);
      expect(rejectedIds.length).toBe(invalidIds.size);
      expect(rejects.filter((r) => r.raw?.includes('oops')).length).toBe(garbageAfter.length);
      expect(rejects.length).toBe(invalidIds.size + garbageAfter.length);
      for (const r of rejects) expect(r.reasons.length).toBeGreaterThan(0);
      const noPlace = rejects.find((r) => r.externalId === 'push-7')!;
      expect(noPlace.reasons[0]!.message).toMatch(/address, coordinates or both/);
      expect(noPlace.line).toBe(8); // push-0 … push-7 on lines 1 … 8
    },
    pushTimeoutMs,
  );

  it('reads CSV from stdin, stores the valid rows and lists the invalid one with its reason', async () => {
    const rejectsPath = join(dir, 'stdin.rejects.ndjson');
    const run = runUploader('-', '--format', 'csv', '--rejects', rejectsPath, '--source-system', 'push-csv', '--wait');
    run.child.stdin!.end(
      'externalId,name,latitude,longitude,address.line1,address.city,address.countryCode,tags\n' +
        'csv-1,Boiler room,52.53,13.38,,,,boiler|gas\n' +
        'csv-2,Roof unit,,,Hauptstraße 14,Berlin,DE,\n' +
        'csv-3,Nowhere,,,,,,\n',
    );
    const { code } = await run.exit;
    expect(code, run.stdout()).toBe(1);
    const { rows } = await suite.pool.query(
      `SELECT external_id, latitude, address, tags FROM targets WHERE source_system = 'push-csv' ORDER BY external_id`,
    );
    expect(rows).toEqual([
      { external_id: 'csv-1', latitude: 52.53, address: null, tags: ['boiler', 'gas'] },
      { external_id: 'csv-2', latitude: null, address: expect.objectContaining({ city: 'Berlin' }), tags: [] },
    ]);
    const rejects = (await readFile(rejectsPath, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rejects).toEqual([
      expect.objectContaining({
        line: 4,
        externalId: 'csv-3',
        reasons: [expect.objectContaining({ field: 'address' })],
      }),
    ]);
  });
});

// The uploader as integrators get it: one file fetched from the gateway they push to, run from an
// empty directory outside the checkout with nothing but Node on PATH (no npm, no node_modules).
describe('connect-push.mjs from the gateway', () => {
  let home: string;
  const small = 'small.ndjson';

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'connect-push-standalone-'));
    expect(await readdir(home)).toEqual([]);
    const res = await fetch(`${suite.gateway.url}/downloads/connect-push.mjs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
    const bytes = Buffer.from(await res.arrayBuffer());
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    expect(res.headers.get('x-checksum-sha256')).toBe(sha256);
    const sum = await fetch(`${suite.gateway.url}/downloads/connect-push.mjs.sha256`);
    expect(sum.status).toBe(200);
    expect(await sum.text()).toBe(`${sha256}  connect-push.mjs\n`);
    await writeFile(join(home, 'connect-push.mjs'), bytes);
    await writeFile(
      join(home, small),
      makeTargets(3, 'standalone')
        .map((t) => JSON.stringify(t))
        .join('\n'),
    );
  });

  afterAll(async () => {
    if (home) await rm(home, { recursive: true, force: true });
  });

  /** node connect-push.mjs … in the empty directory; PATH holds the node binary's directory only. */
  async function standalone(apiKey: string, sourceSystem: string, ...args: string[]) {
    const started = Date.now();
    const child = spawn('node', ['connect-push.mjs', small, '--plain', ...args], {
      cwd: home,
      env: {
        PATH: dirname(process.execPath),
        CONNECT_URL: suite.gateway.url,
        CONNECT_API_KEY: apiKey,
        CONNECT_SOURCE_SYSTEM: sourceSystem,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, output, seconds: (Date.now() - started) / 1000 };
  }

  const jobsOf = async (sourceSystem: string) =>
    Number(
      (await suite.pool.query(`SELECT count(*) AS n FROM import_jobs WHERE source_system = $1`, [sourceSystem])).rows[0]
        .n,
    );

  it('pushes a small batch and waits for it: exit 0', async () => {
    const run = await standalone(suite.demo.clients.all!.apiKey, 'standalone-ok', '--wait');
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain('3 targets');
    expect(run.output).toContain('3 accepted, 0 rejected');
    expect(run.output).toContain('applied 3, failed in the workers 0');
    expect(run.output).not.toMatch(/retries/);
    expect(await jobsOf('standalone-ok')).toBe(1);
  });

  it('an unknown key: exit 2 at once, saying the key is not known', async () => {
    const run = await standalone('ck_live_not-a-key-anyone-has', 'standalone-401');
    expect(run.code, run.output).toBe(2);
    expect(run.seconds, run.output).toBeLessThan(scaled(10_000) / 1000);
    expect(run.output).toMatch(/API key/);
    expect(run.output).toMatch(/\b401\b/);
    expect(run.output).not.toMatch(/run the same command again/);
    expect(await jobsOf('standalone-401')).toBe(0);
  });

  it('a key without the upload scope: exit 2 at once, naming the scope', async () => {
    const { apiKey } = await createClientWithKey(suite.pool, suite.demo.tenantId, 'import_jobs.read');
    const run = await standalone(apiKey, 'standalone-403');
    expect(run.code, run.output).toBe(2);
    expect(run.seconds, run.output).toBeLessThan(scaled(10_000) / 1000);
    expect(run.output).toContain('inbound.targets.batch.write');
    expect(await jobsOf('standalone-403')).toBe(0);
  });

  it('--wait with a key that cannot read import jobs: exit 2 before any upload, naming import_jobs.read', async () => {
    const { apiKey } = await createClientWithKey(suite.pool, suite.demo.tenantId, 'inbound.targets.batch.write');
    const run = await standalone(apiKey, 'standalone-wait-403', '--wait');
    expect(run.code, run.output).toBe(2);
    expect(run.seconds, run.output).toBeLessThan(scaled(10_000) / 1000);
    expect(run.output).toContain('import_jobs.read');
    expect(await jobsOf('standalone-wait-403')).toBe(0);
  });

  it('--help names only scopes that exist', async () => {
    const run = await standalone('unused', 'unused', '--help');
    expect(run.code, run.output).toBe(0);
    const named = run.output.match(/\b[a-z_]+(?:\.[a-z_]+)+\b/g)?.filter((w) => !/\.(mjs|ndjson|csv|json)$/.test(w));
    expect([...new Set(named)].sort()).toEqual(['import_jobs.read', 'inbound.targets.batch.write']);
    for (const scope of named!) expect(integrationScopes).toContain(scope);
  });
});
