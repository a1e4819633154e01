import { describe, expect, it } from 'vitest';
import { bearer, setRateLimit } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { spawnWorkers, type WorkerProcess } from '../support/processes.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';

// The event feed across SIGKILLs: real inbound worker processes write import_job.* events (each
// in the transaction that finishes its job) while a client long-polls the feed; the workers are
// SIGKILLed mid-write three times and restarted. Read to the end, the feed holds every event of
// the table exactly once, in the table's feed order, and each finished import job has its event.

const suite = useGatewaySuite();

const key = () => suite.demo.clients.all!.apiKey;
const clientId = () => suite.demo.clients.all!.clientId;

describe('event feed with the workers SIGKILLed while events are written', () => {
  it(
    'skips and repeats nothing',
    async () => {
      await setRateLimit(suite.pool, clientId(), 1_000_000); // the writers must not starve the reader
      let workers: WorkerProcess = spawnWorkers(suite.config, 'inbound,inbound-express');
      await workers.running(scaled(60_000));

      let writing = true;
      const jobIds: number[] = [];
      const writers = Array.from({ length: 4 }, async (_, w) => {
        // A backlog the workers are still working through (writing events) when they are killed.
        for (let n = 0; writing && n < 100; n++) {
          const res = await suite.api.post('/api/v1/inbound/targets', {
            body: { sourceSystem: 'feed-kill', ...makeTargets(1, `w${w}-${n}`)[0] },
            headers: bearer(key()),
          });
          if (res.status === 200) jobIds.push(res.body.importJobId);
          else {
            expect([429, 503]).toContain(res.status);
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      });

      const read: { id: string; data: { importJobId: number } }[] = [];
      let reading = true;
      let cursor = '';
      const reader = (async () => {
        while (reading) {
          const query = new URLSearchParams({ limit: '200', wait: '2', ...(cursor ? { after: cursor } : {}) });
          const res = await suite.api.get(`/api/v1/events?${query}`, { headers: bearer(key()) });
          if (res.status !== 200) {
            expect([429, 503]).toContain(res.status);
            await new Promise((r) => setTimeout(r, 100));
            continue;
          }
          read.push(...res.body.events);
          cursor = res.body.next;
        }
      })();

      for (let round = 1; round <= 3; round++) {
        const before = read.length;
        await eventually(() => (read.length >= before + 20 ? true : undefined), scaled(60_000), 'events arriving');
        await workers.kill('SIGKILL');
        workers = spawnWorkers(suite.config, 'inbound,inbound-express');
        await workers.running(scaled(60_000));
      }
      writing = false;
      await Promise.all(writers);

      // Every accepted job finishes (redelivered chunks after the kills) and has its one event.
      await eventually(
        async () => {
          const { rows } = await suite.pool.query(
            `SELECT count(*)::int AS n FROM import_jobs WHERE id = ANY($1) AND status IN ('Completed', 'CompletedWithErrors', 'Failed')`,
            [jobIds],
          );
          return rows[0].n === jobIds.length ? true : undefined;
        },
        scaled(120_000),
        'every import job final',
      );
      // Events get their feed positions when the feed is read (shared/webhooks/feed.ts), so the
      // table's order is taken once the reader has read them all: before, the newest may have none
      // yet and sort last (a clean-clone run compared against such a snapshot and failed).
      const { rows: written } = await suite.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_events WHERE client_id = $1`,
        [clientId()],
      );
      await eventually(() => (read.length >= written[0]!.n ? true : undefined), scaled(60_000), 'feed read');
      reading = false;
      await reader;
      await workers.kill('SIGTERM');
      const table = await suite.pool.query<{ id: string }>(
        `SELECT id FROM webhook_events WHERE client_id = $1 ORDER BY feed_seq`,
        [clientId()],
      );

      const ids = read.map((e) => e.id);
      expect(ids).toEqual(table.rows.map((r) => r.id)); // each once, in feed order
      expect(new Set(read.map((e) => e.data.importJobId))).toEqual(new Set(jobIds));
      expect(table.rows.length).toBe(jobIds.length);
      expect(table.rows.length).toBeGreaterThan(60);
    },
    scaled(600_000),
  );
});
