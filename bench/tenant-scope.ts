// `npm run bench:tenant-scope`: what the tenant scope (row-level security on connections of a
// TenantPool, src/shared/db/tenant-scope.ts) costs the gateway's statements, against the same
// statements run unscoped as before issue 25 (a bare pool query; a plain transaction). Runs the
// stores' own SQL on PostgreSQL alone (no HTTP, no Kafka: they would only dilute the difference).
// Alternated rounds; prints medians and ratios; asserts nothing. Needs PostgreSQL (DATABASE_URL).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { demo } from '../src/admin/commands/demo.js';
import { newAppointmentId } from '../src/shared/appointments/ids.js';
import { ensureDatabase, migrateUp } from '../src/shared/db/migrate.js';
import { createPool, inTransaction } from '../src/shared/db/pool.js';
import { createTenantPool, type TenantTx } from '../src/shared/db/tenant-scope.js';
import { findStatus } from '../src/gateway/appointments/store.js';
import { targetExists } from '../src/gateway/jobs/store.js';
import { findImportJob } from '../src/gateway/import-jobs/store.js';
import { insertImportJob, type NewImportJob } from '../src/gateway/inbound/store.js';
import { listBalances } from '../src/gateway/inventory/store.js';

const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect';
const dbName = `connect_bench_${randomBytes(4).toString('hex')}`;
const url = new URL(serverUrl);
url.pathname = `/${dbName}`;
const databaseUrl = url.toString();
const rounds = Number(process.env.ROUNDS ?? 5);
const count = Number(process.env.OPS ?? 3000);
const concurrency = 16;

async function opsPerSecond(op: () => Promise<unknown>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < count) await op();
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

await ensureDatabase(databaseUrl);
await migrateUp(databaseUrl);
const pool = createPool(databaseUrl, concurrency, 'bench');
const tenantPool = createTenantPool(databaseUrl, concurrency, 'bench-scoped');
try {
  /** A demo tenant with one import job: its tenant, its client and the job. */
  const tenantWithJob = async (name: string) => {
    const made = (await demo.run({ pool, warn: () => undefined }, { name })) as {
      tenantId: string;
      clients: Record<string, { clientId: string }>;
    };
    const clientId = made.clients.all!.clientId;
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO import_jobs (tenant_id, client_id, kind, source_system, request_hash, received_count,
                                accepted_count, rejected_count, chunk_count)
       VALUES ($1, $2, 'Single', 'bench', '\\x00', 1, 1, 0, 1) RETURNING id`,
      [made.tenantId, clientId],
    );
    return { tenantId: made.tenantId, clientId, importJobId: rows[0]!.id };
  };
  const { tenantId, clientId, importJobId } = await tenantWithJob('bench');
  // Requests of two tenants in turn: every checkout sets the tenant (the worst case of the pool).
  const tenants = [{ tenantId, clientId, importJobId }, await tenantWithJob('bench other')];
  let turn = 0;
  const appointmentId = newAppointmentId();
  await pool.query(
    `INSERT INTO appointment_requests (id, tenant_id, client_id, external_reference, service_type, priority, request, request_hash)
     VALUES ($1, $2, $3, 'bench', 's', 'normal', '{}', '\\x00')`,
    [appointmentId, tenantId, clientId],
  );
  await pool.query(
    `INSERT INTO appointment_status_history (appointment_request_id, tenant_id, seq, to_status, actor, at)
     SELECT $1, $2, s, 'Submitted', 'system', now() FROM generate_series(1, 5) s`,
    [appointmentId, tenantId],
  );
  await pool.query(
    `INSERT INTO targets (tenant_id, source_system, external_id, name, last_import_job_id, last_item_index)
     VALUES ($1, 'bench', 'T-1', 'bench target', $2, 0)`,
    [tenantId, importJobId],
  );
  const job: NewImportJob = {
    tenantId,
    clientId,
    kind: 'Single',
    sourceSystem: 'bench',
    externalBatchId: null,
    idempotencyKey: null,
    requestHash: Buffer.alloc(32),
    received: 1,
    accepted: 1,
    rejected: 0,
    chunkCount: 1,
    errors: [],
    errorsOmitted: 0,
  };

  // Unscoped: the statements as the gateway ran them before (the cast stands for the old Pool type).
  const asBefore = pool as unknown as TenantTx;
  const paths: { name: string; unscoped: () => Promise<unknown>; scoped: () => Promise<unknown> }[] = [
    {
      name: 'read: import job status (GET import-jobs/{id})',
      unscoped: () => findImportJob(asBefore, clientId, importJobId),
      scoped: () => tenantPool.run(tenantId, (tx) => findImportJob(tx, clientId, importJobId)),
    },
    {
      name: 'read: import job, two tenants alternating',
      unscoped: () => {
        const t = tenants[turn++ % 2]!;
        return findImportJob(asBefore, t.clientId, t.importJobId);
      },
      scoped: () => {
        const t = tenants[turn++ % 2]!;
        return tenantPool.run(t.tenantId, (tx) => findImportJob(tx, t.clientId, t.importJobId));
      },
    },
    {
      name: 'read: appointment status + history (a child table)',
      unscoped: () => findStatus(asBefore, clientId, appointmentId),
      scoped: () => tenantPool.run(tenantId, (tx) => findStatus(tx, clientId, appointmentId)),
    },
    {
      name: 'read: inventory balances (3-table join)',
      unscoped: () => listBalances(asBefore, tenantId),
      scoped: () => tenantPool.run(tenantId, (tx) => listBalances(tx, tenantId)),
    },
    {
      // The scope reads targets through the view tenant_targets (migrations/0019); before, the table.
      name: 'read: target exists (job creation, tenant_targets view)',
      unscoped: () =>
        pool.query('SELECT 1 FROM targets WHERE tenant_id = $1 AND source_system = $2 AND external_id = $3', [
          tenantId,
          'bench',
          'T-1',
        ]),
      scoped: () => tenantPool.run(tenantId, (tx) => targetExists(tx, tenantId, 'bench', 'T-1')),
    },
    {
      name: 'write: single-target import job (edge tx, no Kafka)',
      unscoped: () => inTransaction(pool, (tx) => insertImportJob(tx as TenantTx, job)),
      scoped: () => tenantPool.transaction(tenantId, (tx) => insertImportJob(tx, job)),
    },
  ];

  for (const path of paths) await Promise.all([path.unscoped(), path.scoped()]); // warm-up
  if (!(await tenantPool.run(tenantId, (tx) => targetExists(tx, tenantId, 'bench', 'T-1'))))
    throw new Error('the scoped target read found nothing: the bench would time an empty read');
  console.log(`${rounds} alternated rounds of ${count} operations, ${concurrency} concurrent; median ops/s`);
  for (const path of paths) {
    const unscoped: number[] = [];
    const scoped: number[] = [];
    for (let round = 0; round < rounds; round++) {
      // Alternate which side goes first, so a drift of the machine's load favours neither.
      if (round % 2 === 0) {
        unscoped.push(await opsPerSecond(path.unscoped));
        scoped.push(await opsPerSecond(path.scoped));
      } else {
        scoped.push(await opsPerSecond(path.scoped));
        unscoped.push(await opsPerSecond(path.unscoped));
      }
    }
    const [u, s] = [median(unscoped), median(scoped)];
    console.log(
      `${path.name.padEnd(52)} unscoped ${u.toFixed(0).padStart(6)} /s  scoped ${s.toFixed(0).padStart(6)} /s  ` +
        `scoped/unscoped ×${(s / u).toFixed(2)}  (rounds: ${unscoped.map((x) => x.toFixed(0)).join(' ')} | ${scoped
          .map((x) => x.toFixed(0))
          .join(' ')})`,
    );
  }
} finally {
  await Promise.all([pool.end(), tenantPool.end()]);
  const maintenance = new URL(serverUrl);
  maintenance.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: maintenance.toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
