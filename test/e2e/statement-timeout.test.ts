import { describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { useGatewaySuite } from '../support/suite.js';

// Issue 49: a request's statement that runs past DATABASE_STATEMENT_TIMEOUT_MS is cancelled by
// PostgreSQL and answered 503 service_busy with Retry-After, naming the cause, instead of holding
// a connection until the pool's wait runs out; readiness stays true (PostgreSQL serves). The
// statement is held by a lock the test takes, so no duration decides the outcome.
const suite = useGatewaySuite({ env: () => ({ DATABASE_STATEMENT_TIMEOUT_MS: '300' }) });

describe('a statement past the request statement timeout', () => {
  it('is cancelled and answered 503 service_busy, while /readyz stays 200', async () => {
    const headers = bearer(suite.demo.clients.all!.apiKey);
    const url = (path: string) => new URL(path, suite.gateway.url);
    expect((await fetch(url('/api/v1/import-jobs'), { headers })).status).toBe(200);
    const holder = await suite.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE import_jobs IN ACCESS EXCLUSIVE MODE');
      const res = await fetch(url('/api/v1/import-jobs'), { headers });
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(body.error.code).toBe('service_busy');
      expect(body.error.message).toMatch(/DATABASE_STATEMENT_TIMEOUT_MS/);
      expect((await fetch(url('/readyz'))).status).toBe(200);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    expect((await fetch(url('/api/v1/import-jobs'), { headers })).status).toBe(200);
  });
});
