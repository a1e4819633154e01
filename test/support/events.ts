import type { Pool } from '../../src/shared/db/pool.js';
import { inTransaction } from '../../src/shared/db/pool.js';
import { recordWebhookEvent } from '../../src/shared/webhooks/outbox.js';
import type { ApiClient } from './api-client.js';
import { bearer } from './fixtures.js';

/** The data of a field_job.created event numbered n (test and benchmark events). */
export const fieldJobData = (n: number) => ({
  fieldJobId: '00000000-0000-4000-8000-000000000000',
  jobNumber: `J-${String(n).padStart(6, '0')}`,
  externalId: `feed-${n}`,
  status: 'Created',
  workOrderId: null,
  jobType: 'service',
  title: `event ${n}`,
  createdAt: new Date().toISOString(),
});

/** Records one field_job.created event of the client, as the jobs worker does (its own transaction). */
export function recordTestEvent(pool: Pool, owner: { tenantId: string; clientId: string }, n: number) {
  return inTransaction(pool, (tx) => recordTestEventIn(tx, owner, n));
}

export function recordTestEventIn(
  tx: Parameters<typeof recordWebhookEvent>[0],
  owner: { tenantId: string; clientId: string },
  n: number,
) {
  return recordWebhookEvent(tx, {
    ...owner,
    type: 'field_job.created',
    data: fieldJobData(n),
  });
}

/** Reads the client's feed from `after` to its current end, page by page: every event and the last cursor. */
export async function readFeedToEnd(api: ApiClient, apiKey: string, after?: string, limit = 1000) {
  const events: { id: string; type: string; data: any }[] = [];
  let cursor = after;
  for (;;) {
    const query = new URLSearchParams({ limit: String(limit), ...(cursor ? { after: cursor } : {}) });
    const res = await api.get(`/api/v1/events?${query}`, { headers: bearer(apiKey) });
    if (res.status !== 200) throw new Error(`feed answered ${res.status}: ${res.text}`);
    events.push(...res.body.events);
    cursor = res.body.next;
    if (!res.body.hasMore) return { events, cursor: cursor! };
  }
}
