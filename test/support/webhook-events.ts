import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { inTransaction, type Pool } from '../../src/shared/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import { recordWebhookEvent } from '../../src/shared/webhooks/outbox.js';

/** Raises n field_job.created events for a client in one transaction; their ids, in order. */
export function raiseFieldJobEvents(
  pool: Pool,
  owner: { tenantId: string; clientId: string },
  n: number,
  prefix = 'EVENT',
): Promise<string[]> {
  return inTransaction(pool, async (tx) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const { eventId } = await recordWebhookEvent(tx, {
        ...owner,
        type: 'field_job.created',
        data: {
          fieldJobId: randomUUID(),
          jobNumber: `J-${i}`,
          externalId: `${prefix}-${i}`,
          status: 'Created',
          workOrderId: null,
          jobType: 'MAINTENANCE',
          title: `Job ${i}`,
          createdAt: new Date().toISOString(),
        },
      });
      ids.push(eventId);
    }
    return ids;
  });
}

/** A logger whose lines (JSON) a test reads back. */
export function capturedLogger(name: string) {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: createLogger('info', name, sink), lines };
}
