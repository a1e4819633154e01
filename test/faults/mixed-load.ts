// The mixed load of the PostgreSQL failover test (issue 40), beside the harness's: material
// usages, appointment requests (OAuth), event-feed long-polls; what they became at the end, and
// the checks on it; and the admin CLI in the test process. Used by the failover test and the
// rolling-upgrade test (issue 52), which runs it against two releases' gateways.
import { Writable } from 'node:stream';
import type pg from 'pg';
import { expect } from 'vitest';
import { runAdmin } from '../../src/admin/run.js';
import { bearer } from '../support/fixtures.js';
import { balanceOf, materialsPath, usageLedger } from '../support/materials.js';
import { scaled } from '../support/time-scale.js';
import type { WebhookReceiver } from '../support/webhook-receiver.js';
import { waitFor, type Scenario } from './harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type Outcome = number | 'network' | 'timeout';
export type Try = {
  lane: string;
  start: number;
  end: number;
  outcome: Outcome;
  retryAfter: string | null;
  error?: string;
};

/** One HTTP request, recorded; never throws. */
export async function call(
  tries: Try[],
  lane: string,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
  timeoutMs = 30_000,
): Promise<{ t: Try; body: any }> {
  const start = Date.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let body: any = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = null;
    }
    const t: Try = { lane, start, end: Date.now(), outcome: res.status, retryAfter: res.headers.get('retry-after') };
    if (!res.ok) t.error = String(body?.error?.message ?? body?.error ?? text).slice(0, 120);
    tries.push(t);
    return { t, body };
  } catch (err) {
    const t: Try = {
      lane,
      start,
      end: Date.now(),
      outcome: (err as Error).name === 'TimeoutError' ? 'timeout' : 'network',
      retryAfter: null,
      error: String((err as Error).message).slice(0, 120),
    };
    tries.push(t);
    return { t, body: null };
  }
}

/** How many of each value. */
export const count = (values: unknown[]) => {
  const m = new Map<string, number>();
  for (const v of values) m.set(String(v), (m.get(String(v)) ?? 0) + 1);
  return Object.fromEntries(m);
};

export const ok = (o: Outcome) => typeof o === 'number' && o >= 200 && o < 300;

/** Waits as a client would before sending the same request again; false when it is not worth it. */
export async function backOff(t: Try): Promise<boolean> {
  if (t.outcome === 503 || t.outcome === 429) {
    const after = Number(t.retryAfter);
    await sleep(Math.min(Number.isFinite(after) && after > 0 ? after * 1000 : 500, 1000) + Math.random() * 100);
    return true;
  }
  if (t.outcome === 'network' || t.outcome === 'timeout' || (typeof t.outcome === 'number' && t.outcome >= 500)) {
    await sleep(200 + Math.random() * 100);
    return true;
  }
  return false;
}

const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString().replace('Z', '+00:00');

export class MixedLoad {
  readonly tries: Try[] = [];
  /** Material usage event id → quantity, once answered 2xx. */
  readonly usages = new Map<string, number>();
  /** Appointment externalReference → request id, once answered 2xx. */
  readonly appointments = new Map<string, string>();
  /** Requests given up on (not 2xx and not worth a retry): `lane status error`. */
  readonly unfinished: string[] = [];
  /** Events read from the feed, in order, with when they arrived. */
  readonly feed: { id: string; at: number }[] = [];
  /** Long-polls answered: when asked, when answered, how many events. */
  readonly polls: { start: number; end: number; events: number }[] = [];
  private running = false;
  private reading = false;
  private lanes: Promise<void>[] = [];
  private reader: Promise<void> | null = null;
  private seq = { usage: 0, appointment: 0 };
  /** The appointment lane's OAuth access token, fetched again at 80 % of its lifetime (a roll can outlast one). */
  private token: { value: string; renewAt: number } | null = null;

  constructor(
    private readonly s: Scenario,
    private readonly item: { sku: string; unit: string },
    /** Usage event ids and appointment references start with it. */
    readonly prefix = 'failover',
  ) {}

  private base() {
    return this.s.fleet.url() ?? 'http://127.0.0.1:1';
  }

  start() {
    this.running = true;
    this.lanes = [this.usageLane(), this.usageLane(), this.appointmentLane()];
    if (!this.reader) {
      this.reading = true;
      this.reader = this.feedLane();
    }
  }

  /** Stops sending; the requests in hand are retried until answered 2xx. */
  async stop() {
    this.running = false;
    await Promise.all(this.lanes);
  }

  async stopReading() {
    this.reading = false;
    await this.reader;
  }

  /** Sends until 2xx (retrying 503/429/5xx/network with the same body); the 2xx answer or null. */
  private async untilAcked(lane: string, send: () => Promise<{ t: Try; body: any }>) {
    const deadline = Date.now() + scaled(180_000);
    for (;;) {
      const r = await send();
      if (ok(r.t.outcome)) return r;
      if (r.t.outcome === 401 && lane === 'appointments')
        this.token = null; // a new token next time
      else if (Date.now() > deadline || !(await backOff(r.t))) {
        this.unfinished.push(`${lane} ${r.t.outcome} ${r.t.error ?? ''}`);
        return null;
      }
    }
  }

  private async usageLane() {
    const key = this.s.demo.clients.all!.apiKey;
    while (this.running) {
      const i = this.seq.usage++;
      const eventId = `${this.prefix}-usage-${i}`;
      const quantity = ((i % 9) + 1) / 8; // eighths: exact in numeric(18,4)
      const wo = this.s.demo.workOrders[i % this.s.demo.workOrders.length]!;
      const body = JSON.stringify({
        externalEventId: eventId,
        externalLocationCode: 'WH-MAIN',
        usedAt: new Date(Date.UTC(2025, 5, 1, 8) + i * 1000).toISOString(),
        materials: [{ sku: this.item.sku, quantity, unitOfMeasure: this.item.unit }],
      });
      const r = await this.untilAcked('materials', () =>
        call(this.tries, 'materials', `${this.base()}${materialsPath.byId(wo.workOrderId)}`, {
          method: 'POST',
          headers: { ...bearer(key), 'content-type': 'application/json' },
          body,
        }),
      );
      if (r) this.usages.set(eventId, quantity);
      await sleep(50);
    }
  }

  private async accessToken(): Promise<{ value: string; renewAt: number } | null> {
    const client = this.s.demo.clients.all!;
    const r = await this.untilAcked('oauth-token', () =>
      call(this.tries, 'oauth-token', `${this.base()}/connect/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: client.clientId,
          client_secret: client.apiKey,
        }).toString(),
      }),
    );
    if (!r?.body?.access_token) return null;
    return { value: r.body.access_token, renewAt: Date.now() + 0.8 * 1000 * Number(r.body.expires_in) };
  }

  private async appointmentLane() {
    while (this.running) {
      const ref = `${this.prefix}-apr-${this.seq.appointment++}`;
      const body = JSON.stringify({
        externalReference: ref,
        serviceType: 'repair',
        priority: 'high',
        customer: { name: 'Harbour Hospital' },
        contact: { name: 'Kim Meyer', email: 'kim.meyer@example.com' },
        location: { address: { line1: 'Am Hafen 1', city: 'Hamburg', countryCode: 'DE' } },
        preferredTimeWindows: [{ start: inHours(24), end: inHours(28) }],
      });
      const r = await this.untilAcked('appointments', async () => {
        if (!this.token || Date.now() >= this.token.renewAt) this.token = await this.accessToken();
        return call(this.tries, 'appointments', `${this.base()}/connect/v1/appointment-requests`, {
          method: 'POST',
          headers: { authorization: `Bearer ${this.token?.value}`, 'content-type': 'application/json' },
          body,
        });
      });
      if (r) this.appointments.set(ref, r.body.id);
      await sleep(150);
    }
  }

  private async feedLane() {
    const key = this.s.demo.clients.all!.apiKey;
    let cursor = '';
    while (this.reading) {
      const query = new URLSearchParams({ limit: '200', wait: '5', ...(cursor ? { after: cursor } : {}) });
      const { t, body } = await call(this.tries, 'event-feed', `${this.base()}/api/v1/events?${query}`, {
        headers: bearer(key),
      });
      if (t.outcome !== 200) {
        await backOff(t);
        continue;
      }
      for (const e of body.events as { id: string }[]) this.feed.push({ id: e.id, at: t.end });
      this.polls.push({ start: t.start, end: t.end, events: body.events.length });
      cursor = body.next;
    }
  }
}

/** The admin CLI in this process, on the scenario's database and topics: its JSON answer. */
export async function adminCli(s: Scenario, ...argv: string[]): Promise<any> {
  let out = '';
  let err = '';
  const sink = (append: (x: string) => void) =>
    new Writable({
      write(chunk, _enc, done) {
        append(String(chunk));
        done();
      },
    });
  const code = await runAdmin(argv, {
    stdout: sink((x) => (out += x)),
    stderr: sink((x) => (err += x)),
    env: {
      DATABASE_URL: s.config.database.url,
      KAFKA_BROKERS: s.config.kafka.brokers.join(','),
      KAFKA_TOPIC_PREFIX: s.config.kafka.topicPrefix,
    },
  });
  if (code !== 0) throw new Error(`admin ${argv.join(' ')} exited ${code}: ${err}`);
  return JSON.parse(out);
}

/** What the usages draw on: the demo tenant's VALVE-BALL-12 at WH-MAIN, and its balance now. */
export async function mixedLoadStock(pool: pg.Pool, tenantId: string) {
  const { rows } = await pool.query(
    `SELECT i.id AS item, i.sku, i.unit_of_measure AS unit, l.id AS location FROM inventory_items i, inventory_locations l
      WHERE i.tenant_id = $1 AND l.tenant_id = $1 AND i.sku = 'VALVE-BALL-12' AND l.external_code = 'WH-MAIN'`,
    [tenantId],
  );
  const item = rows[0] as { item: string; sku: string; unit: string; location: string };
  return { item, startBalance: (await balanceOf(pool, item.item, item.location))! };
}

export type MixedLoadOutcome = Awaited<ReturnType<typeof mixedLoadOutcome>>;

/**
 * What the mixed load's acknowledged requests became, read once the load has stopped: waits for
 * the usages, appointment requests and webhook deliveries to settle and for the feed to be read
 * to the end (each up to a deadline), then reads the ledgers, the dead letters, the webhooks the
 * receiver got and the feed's order. `expectMixedLoadOutcome` judges it.
 */
export async function mixedLoadOutcome(
  s: Scenario,
  mixed: MixedLoad,
  {
    pool,
    receiver,
    stock,
  }: { pool: pg.Pool; receiver: WebhookReceiver; stock: Awaited<ReturnType<typeof mixedLoadStock>> },
) {
  const tenantId = s.demo.tenantId;
  const clientId = s.demo.clients.all!.clientId;
  const settled = await waitFor(async () => {
    const { rows } = await pool.query(
      `SELECT (SELECT count(*)::int FROM material_usages WHERE tenant_id = $1 AND status = 'Pending') AS usages,
              (SELECT count(*)::int FROM appointment_requests WHERE tenant_id = $1 AND status = 'Submitted') AS appointments,
              (SELECT count(*)::int FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
                WHERE e.client_id = $2 AND d.status IN ('Pending', 'Delivering')) AS deliveries`,
      [tenantId, clientId],
    );
    return rows[0].usages === 0 && rows[0].appointments === 0 && rows[0].deliveries === 0;
  }, 120_000);

  const ledger = await usageLedger(pool, tenantId, `${mixed.prefix}-usage`);
  const byEvent = new Map(ledger.map((r) => [r.external_event_id, r]));
  const usages = {
    notBookedOnce: [...mixed.usages.keys()].filter(
      (id) => byEvent.get(id)?.status !== 'Applied' || byEvent.get(id)?.movements !== 1,
    ),
    failed: ledger.filter((r) => r.status === 'Failed').map((r) => r.external_event_id as string),
    balance: await balanceOf(pool, stock.item.item, stock.item.location),
    expectedBalance: stock.startBalance - [...mixed.usages.values()].reduce((a, b) => a + b, 0),
  };

  const { rows: aprs } = await pool.query(
    `SELECT external_reference, status, count(*) OVER (PARTITION BY external_reference)::int AS n
       FROM appointment_requests WHERE tenant_id = $1`,
    [tenantId],
  );
  const aprByRef = new Map(aprs.map((r) => [r.external_reference as string, r]));
  const appointments = {
    notOnceReviewed: [...mixed.appointments.keys()].filter(
      (ref) => aprByRef.get(ref)?.status !== 'PendingReview' || aprByRef.get(ref)?.n !== 1,
    ),
    failed: aprs.filter((r) => r.status === 'Failed').map((r) => `${r.external_reference}`),
  };

  const deadLetters: { count: number; error?: string } = await adminCli(
    s,
    'dead-letters',
    'list',
    '--include-handled',
  ).catch((e: Error) => ({ count: -1, error: e.message }));

  // Webhooks: every event of the client delivered (Succeeded) and received by the receiver.
  const { rows: events } = await pool.query(
    `SELECT e.id, d.status FROM webhook_events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id WHERE e.client_id = $1`,
    [clientId],
  );
  const receivedIds = new Map<string, number>();
  for (const r of receiver.received('/hooks'))
    receivedIds.set(r.headers['webhook-id']!, (receivedIds.get(r.headers['webhook-id']!) ?? 0) + 1);
  const webhooks = {
    events: events.length,
    notDelivered: events.filter((e) => e.status !== 'Succeeded' || !receivedIds.has(e.id)).map((e) => e.id as string),
    duplicates: [...receivedIds.values()].filter((n) => n > 1).length,
  };

  // The feed: read to the end, each event once, in the table's feed order.
  const fed = await waitFor(() => mixed.feed.length >= events.length, 60_000);
  const { rows: feed } = await pool.query(
    `SELECT id, created_at FROM webhook_events WHERE client_id = $1 ORDER BY feed_seq`,
    [clientId],
  );
  const feedOrder = feed.map((r) => ({ id: r.id as string, createdAt: (r.created_at as Date).getTime() }));
  return { settled, usages, appointments, deadLetters, webhooks, fed, feedOrder };
}

/** The checks on it (soft: every failure is reported), each message after `label`. */
export function expectMixedLoadOutcome(o: MixedLoadOutcome, mixed: MixedLoad, label = '') {
  expect.soft(o.settled, `${label}usages applied, appointments validated, webhooks delivered`).toBe(true);
  expect.soft(o.usages.notBookedOnce, `${label}acknowledged usages not Applied once`).toEqual([]);
  expect.soft(o.usages.failed, `${label}usages Failed`).toEqual([]);
  expect.soft(o.usages.balance, `${label}stock balance`).toBe(o.usages.expectedBalance);
  expect
    .soft(o.appointments.notOnceReviewed, `${label}acknowledged appointment requests not once PendingReview`)
    .toEqual([]);
  expect.soft(o.appointments.failed, `${label}appointment requests Failed`).toEqual([]);
  expect.soft(o.deadLetters, `${label}dead letters (admin dead-letters list)`).toMatchObject({ count: 0 });
  expect.soft(o.webhooks.notDelivered, `${label}webhook events not delivered`).toEqual([]);
  expect.soft(o.fed, `${label}the feed read to the end`).toBe(true);
  expect
    .soft(
      mixed.feed.map((e) => e.id),
      `${label}the feed, each event once in feed order`,
    )
    .toEqual(o.feedOrder.map((r) => r.id));
  expect.soft(mixed.unfinished, `${label}requests given up on`).toEqual([]);
}
