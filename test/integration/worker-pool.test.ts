import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { createPool } from '../../src/shared/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import { createWorkerPool } from '../../src/workers/start-workers.js';

// A worker's connections hand written data pages to the disk as they go (WORKER_PG_FLUSH_AFTER_KB,
// PostgreSQL's backend_flush_after): without it a bulk backlog's pages piled up until a
// checkpoint's fsync, which stalled the gateway's and small imports' commits (bench:fairness).

// Any database of the server: the setting is the session's.
const databaseUrl = Object.assign(new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect'), {
  pathname: '/postgres',
}).href;
const flushAfter = async (env: Record<string, string>) => {
  const pool = createWorkerPool(loadConfig({ DATABASE_URL: databaseUrl, ...env }), createLogger('silent', 'pool'));
  try {
    const { rows } = await pool.query<{ backend_flush_after: string }>('SHOW backend_flush_after');
    return rows[0]!.backend_flush_after;
  } finally {
    await pool.end();
  }
};

describe('worker connections', () => {
  it('set backend_flush_after to WORKER_PG_FLUSH_AFTER_KB (256 kB unless set), and leave the server’s with 0', async () => {
    expect(await flushAfter({})).toBe('256kB');
    expect(await flushAfter({ WORKER_PG_FLUSH_AFTER_KB: '1024' })).toBe('1MB');
    // 0: nothing sent, so the session has what a plain connection to the server gets.
    const plain = createPool(databaseUrl, 1, 'plain');
    const server = (await plain.query('SHOW backend_flush_after').finally(() => plain.end())).rows[0]
      .backend_flush_after;
    expect(await flushAfter({ WORKER_PG_FLUSH_AFTER_KB: '0' })).toBe(server);
    expect(server).not.toBe('1MB');
  });
});
