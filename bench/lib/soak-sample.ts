// What bench/soak.ts samples every interval: each growing table's size (table + indexes) and
// tuples from PostgreSQL's statistics, the import jobs' apply times of the interval, and the
// verdict figures computed from the samples at the end.
import type pg from 'pg';
import { percentiles, round } from './stats.js';

/** Tables that retention prunes: their size should stop growing once the first retention period is over. */
export const prunedTables = [
  'import_jobs',
  'import_job_chunks',
  'route_suggestions',
  'webhook_events',
  'webhook_deliveries',
  'webhook_attempts',
  'dead_letter_actions',
  'dead_letters_handled',
] as const;

/**
 * Business records and the edge records of field jobs and usages: kept by design (issue 51), so
 * they grow with the load. Sampled and printed apart.
 */
export const keptTables = [
  'targets',
  'field_jobs',
  'job_requests',
  'material_usages',
  'material_usage_lines',
  'stock_movements',
  'inventory_balances',
] as const;

export type TableSample = {
  totalBytes: number;
  indexBytes: number;
  /**
   * Of totalBytes, the free-space and visibility map forks of the table, its indexes and its
   * TOAST: at least 24 kB (FSM) per relation once a vacuum has something to record, 8 kB (VM)
   * per table, created once and growing with the data by about 1/4,000. On tables of a few
   * hundred kB they read as growth; the data pages are totalBytes - mapBytes. Absent in runs
   * before 2026-12-05's fifth (0 then).
   */
  mapBytes?: number;
  live: number;
  dead: number;
  lastAutovacuum: string | null;
  autovacuums: number;
};

export type Sample = {
  /** Seconds since the load started. */
  t: number;
  at: string;
  tables: Record<string, TableSample>;
  prunedBytes: number;
  /** Of prunedBytes, the map forks (see TableSample.mapBytes). */
  prunedMapBytes?: number;
  keptBytes: number;
  databaseBytes: number;
  /** Import jobs that finished in the interval: accept (created_at) to final (completed_at). */
  apply: { Batch: number[]; Single: number[] };
  unfinishedJobs: number;
  reads: number[];
  writes: number[];
  writeErrors: number;
  readErrors: number;
  webhooksReceived: number;
};

export async function sampleTables(pool: pg.Pool) {
  const { rows } = await pool.query<{
    relname: string;
    total: string;
    idx: string;
    maps: string;
    live: string;
    dead: string;
    last_autovacuum: Date | null;
    autovacuum_count: string;
  }>(
    `SELECT s.relname, pg_total_relation_size(s.relid) AS total, pg_indexes_size(s.relid) AS idx,
            (SELECT sum(pg_relation_size(r.oid, 'fsm') + pg_relation_size(r.oid, 'vm'))
               FROM pg_class r
              WHERE r.oid IN (s.relid, c.reltoastrelid)
                 OR r.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (s.relid, c.reltoastrelid))) AS maps,
            s.n_live_tup AS live, s.n_dead_tup AS dead, s.last_autovacuum, s.autovacuum_count
       FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.relname = ANY($1::text[])`,
    [[...prunedTables, ...keptTables]],
  );
  const tables: Record<string, TableSample> = {};
  for (const r of rows)
    tables[r.relname] = {
      totalBytes: Number(r.total),
      indexBytes: Number(r.idx),
      mapBytes: Number(r.maps),
      live: Number(r.live),
      dead: Number(r.dead),
      lastAutovacuum: r.last_autovacuum?.toISOString() ?? null,
      autovacuums: Number(r.autovacuum_count),
    };
  const sum = (names: readonly string[], bytes: (t: TableSample) => number = (t) => t.totalBytes) =>
    names.reduce((n, t) => n + (tables[t] ? bytes(tables[t]) : 0), 0);
  const db = await pool.query<{ size: string }>('SELECT pg_database_size(current_database()) AS size');
  return {
    tables,
    prunedBytes: sum(prunedTables),
    prunedMapBytes: sum(prunedTables, (t) => t.mapBytes ?? 0),
    keptBytes: sum(keptTables),
    databaseBytes: Number(db.rows[0]!.size),
  };
}

/** Apply times (ms) of the import jobs that finished in (from, to], by kind, and how many are not final. */
export async function applyTimes(pool: pg.Pool, from: Date, to: Date) {
  const { rows } = await pool.query<{ kind: 'Batch' | 'Single'; ms: number }>(
    `SELECT kind, extract(epoch FROM completed_at - created_at) * 1000 AS ms
       FROM import_jobs WHERE completed_at > $1 AND completed_at <= $2`,
    [from, to],
  );
  const unfinished = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM import_jobs WHERE completed_at IS NULL',
  );
  const apply = { Batch: [] as number[], Single: [] as number[] };
  for (const r of rows) apply[r.kind]?.push(round(Number(r.ms), 1));
  return { apply, unfinishedJobs: unfinished.rows[0]!.n };
}

const mib = (bytes: number) => round(bytes / 1024 / 1024, 2);
const p99 = (values: number[]) => round(percentiles(values).p99);
const change = (from: number, to: number) => (from > 0 ? round(((to - from) / from) * 100) : Number.NaN);

/**
 * The verdict: each pruned table's size at the first sample after the first retention period
 * and a prune interval (`referenceSeconds`) against the last sample (aim ±10 %), also without the
 * map forks; p99s of the
 * first third of the run (after its first interval, `warmupSeconds`) against the last
 * third; the most dead tuples each table had.
 */
export function verdict(
  samples: Sample[],
  referenceSeconds: number,
  warmupSeconds: number,
  settledSeconds = 2 * referenceSeconds,
) {
  const reference = samples.find((s) => s.t >= referenceSeconds) ?? samples.at(-1)!;
  // A second retention period later: the space the first prunes freed is reusable once autovacuum
  // has been through, so the size settles one period or so after the rows did.
  const settled = samples.find((s) => s.t >= settledSeconds) ?? samples.at(-1)!;
  const first = samples[0]!;
  const last = samples.at(-1)!;
  const sizes = Object.fromEntries(
    [...prunedTables, ...keptTables].map((t) => {
      const at = (s: Sample) => s.tables[t]?.totalBytes ?? 0;
      return [
        t,
        {
          startMiB: mib(at(first)),
          afterRetentionMiB: mib(at(reference)),
          endMiB: mib(at(last)),
          maxMiB: mib(Math.max(...samples.filter((s) => s.t >= reference.t).map(at))),
          changePercent: change(at(reference), at(last)),
          rowsAfterRetention: reference.tables[t]?.live ?? 0,
          rowsAtEnd: last.tables[t]?.live ?? 0,
          kept: (keptTables as readonly string[]).includes(t),
        },
      ];
    }),
  );
  const runSeconds = last.t;
  // The first interval (processes warming up: JIT, connections, Kafka metadata) is left out.
  const third = (k: 0 | 2) =>
    samples.filter((s) => (k === 0 ? s.t > warmupSeconds && s.t <= runSeconds / 3 : s.t > (2 * runSeconds) / 3));
  const joined = (ss: Sample[], pick: (s: Sample) => number[]) => ss.flatMap(pick);
  const thirds = Object.fromEntries(
    (
      [
        ['applyBatch', (s: Sample) => s.apply.Batch],
        ['applySingle', (s: Sample) => s.apply.Single],
        ['read', (s: Sample) => s.reads],
        ['write', (s: Sample) => s.writes],
      ] as const
    ).map(([name, pick]) => {
      const a = p99(joined(third(0), pick));
      const b = p99(joined(third(2), pick));
      return [name, { firstThirdP99: a, lastThirdP99: b, ratio: round(b / a, 2) }];
    }),
  );
  const deadTuples = Object.fromEntries(
    [...prunedTables, ...keptTables].map((t) => {
      const worst = samples.reduce(
        (m, s) => ((s.tables[t]?.dead ?? 0) > m.dead ? { dead: s.tables[t]!.dead, live: s.tables[t]!.live } : m),
        { dead: 0, live: 0 },
      );
      return [
        t,
        {
          maxDead: worst.dead,
          liveThen: worst.live,
          autovacuums: last.tables[t]?.autovacuums ?? 0,
          lastAutovacuum: last.tables[t]?.lastAutovacuum ?? null,
        },
      ];
    }),
  );
  const pruned = {
    startMiB: mib(first.prunedBytes),
    afterRetentionMiB: mib(reference.prunedBytes),
    endMiB: mib(last.prunedBytes),
    maxMiB: mib(Math.max(...samples.filter((s) => s.t >= reference.t).map((s) => s.prunedBytes))),
    changePercent: change(reference.prunedBytes, last.prunedBytes),
  };
  // The same without the map forks, which appear once (at the first vacuums that free pages) and
  // are a fixed 24-32 kB per relation, not growth of the data.
  const data = (s: Sample) => s.prunedBytes - (s.prunedMapBytes ?? 0);
  const prunedData = {
    afterRetentionMiB: mib(data(reference)),
    endMiB: mib(data(last)),
    maxMiB: mib(Math.max(...samples.filter((s) => s.t >= reference.t).map(data))),
    changePercent: change(data(reference), data(last)),
    mapsAfterRetentionMiB: mib(reference.prunedMapBytes ?? 0),
    mapsEndMiB: mib(last.prunedMapBytes ?? 0),
  };
  const afterSettled = samples.filter((s) => s.t >= settled.t);
  const settledFigures = {
    seconds: settled.t,
    prunedMiB: mib(settled.prunedBytes),
    endMiB: mib(last.prunedBytes),
    minMiB: mib(Math.min(...afterSettled.map((s) => s.prunedBytes))),
    maxMiB: mib(Math.max(...afterSettled.map((s) => s.prunedBytes))),
    changePercent: change(settled.prunedBytes, last.prunedBytes),
    tables: Object.fromEntries(
      prunedTables.map((t) => [t, change(settled.tables[t]?.totalBytes ?? 0, last.tables[t]?.totalBytes ?? 0)]),
    ),
  };
  return { referenceSeconds: reference.t, pruned, prunedData, settled: settledFigures, sizes, p99: thirds, deadTuples };
}

export type Verdict = ReturnType<typeof verdict>;
