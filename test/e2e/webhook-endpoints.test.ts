import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookCreate, webhookList } from '../../src/admin/commands/webhook.js';
import { createLogger } from '../../src/shared/logger.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import { webhookDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { createApiClient } from '../support/api-client.js';
import { admin, bearer, createClientWithKey } from '../support/fixtures.js';
import { startTestGateway, testConfig, type TestGateway } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import {
  matchingSignatures,
  startWebhookReceiver,
  verifiesWith,
  webhookBodyValidator,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

// A client manages its own webhook endpoints through the API (scope webhooks.manage), every
// operation against the real gateway, dispatcher, inbound worker and an HTTP receiver here.

const suite = useGatewaySuite({
  env: () => ({
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', // the receiver is on 127.0.0.1
    WEBHOOK_POLL_INTERVAL_MS: '100',
    WEBHOOK_RETRY_SCHEDULE: '0.1', // one retry, then the delivery gives up (replay-failed)
    WEBHOOK_ENDPOINTS_PER_CLIENT: '10',
  }),
  workers: [inboundWorker, inboundExpressWorker],
});

let receiver: WebhookReceiver;
let dispatcher: RunningWorkers;
let other: { clientId: string; apiKey: string };
let otherEndpointId: string;
const me = () => bearer(suite.demo.clients.all!.apiKey);
const clientId = () => suite.demo.clients.all!.clientId;
const base = '/api/v1/webhook-endpoints';

const create = (path: string, events: string[] = ['all'], headers = me()) =>
  suite.api.post(base, { body: { url: receiver.url(path), events }, headers });

/** A new endpoint of the caller (201 checked). */
async function created(path: string, events?: string[]) {
  const res = await create(path, events);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  dispatcher = await startWorkers({
    config: suite.config,
    logger: createLogger('warn', 'test-webhooks'),
    kinds: [webhookDispatcher],
  });
  other = await createClientWithKey(suite.pool, suite.demo.tenantId, 'webhooks.manage');
  const res = await create('/other', ['all'], bearer(other.apiKey));
  expect(res.status).toBe(201);
  otherEndpointId = res.body.endpointId;
});

afterAll(async () => {
  await dispatcher?.stop();
  await receiver?.close();
});

describe('webhook endpoints through the API', () => {
  it('create shows the secret once; read and list never do; the admin CLI sees the same endpoint', async () => {
    const res = await create('/created', ['import_job.failed', 'import_job.completed']);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      clientId: clientId(),
      url: receiver.url('/created'),
      events: ['import_job.completed', 'import_job.failed'], // catalogue order
      status: 'Active',
    });
    expect(res.body.secret).toMatch(/^whsec_/);
    const read = await suite.api.get(`${base}/${res.body.endpointId}`, { headers: me() });
    expect(read.status).toBe(200);
    expect(read.text).not.toContain(res.body.secret);
    expect(read.body).toEqual(Object.fromEntries(Object.entries(res.body).filter(([k]) => k !== 'secret')));
    const list = await suite.api.get(base, { headers: me() });
    expect(list.body.items.map((e: { endpointId: string }) => e.endpointId)).toContain(res.body.endpointId);
    expect(list.text).not.toContain(res.body.secret);
    const cli = await admin(suite.pool, webhookList, ['--client', clientId()]);
    expect(cli.endpoints.map((e: { endpointId: string }) => e.endpointId)).toContain(res.body.endpointId);
  });

  it("another client's endpoint is 404 for every operation, and never listed", async () => {
    const id = otherEndpointId;
    const list = await suite.api.get(base, { headers: me() });
    expect(list.body.items.map((e: { endpointId: string }) => e.endpointId)).not.toContain(id);
    const attempts = [
      suite.api.get(`${base}/${id}`, { headers: me() }),
      suite.api.request('patch', `${base}/${id}`, { body: { events: ['all'] }, headers: me() }),
      suite.api.request('delete', `${base}/${id}`, { headers: me() }),
      suite.api.post(`${base}/${id}/disable`, { headers: me() }),
      suite.api.post(`${base}/${id}/enable`, { headers: me() }),
      suite.api.post(`${base}/${id}/rotate-secret`, { body: {}, headers: me() }),
      suite.api.post(`${base}/${id}/test`, { headers: me() }),
      suite.api.get(`${base}/${id}/attempts`, { headers: me() }),
      suite.api.post(`${base}/${id}/replay-failed`, { body: { since: new Date(0).toISOString() }, headers: me() }),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('resource_not_found');
    }
    // Still there and untouched for its owner.
    const mine = await suite.api.get(`${base}/${id}`, { headers: bearer(other.apiKey) });
    expect(mine.body).toMatchObject({ status: 'Active', events: ['all'] });
  });

  it('needs the scope webhooks.manage', async () => {
    const reader = suite.demo.clients['import_jobs.read']!.apiKey;
    const res = await suite.api.get(base, { headers: bearer(reader) });
    expect(res.status).toBe(403);
    expect(res.body.error.details.requiredScope).toBe('webhooks.manage');
  });

  it('refuses URLs of the wrong form, and private targets where they are not allowed (as the CLI does)', async () => {
    for (const url of ['ftp://example.com/x', 'https://user:pw@example.com/x', 'https://example.com/#x', 'nope']) {
      const res = await suite.api.post(base, { body: { url, events: ['all'] }, headers: me() });
      expect(res.status, url).toBe(400);
      expect(res.body.error.fieldErrors.url).toHaveLength(1);
    }
    const strict: TestGateway = await startTestGateway(
      testConfig(suite.db.url, { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' }),
    );
    try {
      const api = await createApiClient(strict.url);
      for (const url of ['http://127.0.0.1:9/x', 'http://[::1]/x', 'http://10.1.2.3/x', 'http://localhost/x']) {
        const res = await api.post(base, { body: { url, events: ['all'] }, headers: me() });
        expect(res.status, url).toBe(400);
        expect(res.body.error.fieldErrors.url[0]).toMatch(/range; set WEBHOOK_ALLOW_PRIVATE_TARGETS/);
      }
      const id = (await created('/patch-me')).endpointId;
      const patched = await api.request('patch', `${base}/${id}`, {
        body: { url: 'http://169.254.169.254/latest' },
        headers: me(),
      });
      expect(patched.status).toBe(400);
      expect((await suite.api.get(`${base}/${id}`, { headers: me() })).body.url).toBe(receiver.url('/patch-me'));
      await suite.api.request('delete', `${base}/${id}`, { headers: me() });
    } finally {
      await strict.stop();
    }
  });

  it('test sends a signed webhook.test to that endpoint alone; attempts lists it', async () => {
    const res = await create('/tested', ['field_job.created']);
    const { endpointId, secret } = res.body;
    const sent = await suite.api.post(`${base}/${endpointId}/test`, { headers: me() });
    expect(sent.status).toBe(202);
    expect(sent.body).toMatchObject({ type: 'webhook.test', endpointStatus: 'Active' });
    const [hit] = await receiver.waitFor('/tested', 1);
    expect(verifiesWith(secret, hit!)).toBe(true);
    expect(hit!.json).toMatchObject({ id: sent.body.eventId, type: 'webhook.test', data: { endpointId } });
    expect(webhookBodyValidator(suite.api.doc)(hit!.json)).toEqual([]);
    expect(receiver.received('/created').filter((r) => r.json?.id === sent.body.eventId)).toEqual([]);
    const attempts = await eventually(async () => {
      const a = await suite.api.get(`${base}/${endpointId}/attempts`, { headers: me() });
      return a.body.items.length > 0 ? a.body.items : undefined;
    });
    expect(attempts[0]).toMatchObject({
      eventId: sent.body.eventId,
      outcome: 'Succeeded',
      statusCode: 200,
      deliveryStatus: 'Succeeded',
    });
    const byEvent = await suite.api.get(`${base}/${endpointId}/attempts?eventId=${sent.body.eventId}&limit=1`, {
      headers: me(),
    });
    expect(byEvent.body.items).toHaveLength(1);
    expect(byEvent.body.nextCursor).toBeNull();

    // Pages by cursor: a second test event, then one attempt a page, newest first, to the end.
    const again = await suite.api.post(`${base}/${endpointId}/test`, { headers: me() });
    await receiver.waitFor('/tested', 2);
    await eventually(async () => {
      const a = await suite.api.get(`${base}/${endpointId}/attempts`, { headers: me() });
      return a.body.items.length === 2 ? true : undefined;
    });
    const newest = await suite.api.get(`${base}/${endpointId}/attempts?limit=1`, { headers: me() });
    expect(newest.body.items.map((a: { eventId: string }) => a.eventId)).toEqual([again.body.eventId]);
    const older = await suite.api.get(`${base}/${endpointId}/attempts?limit=1&cursor=${newest.body.nextCursor}`, {
      headers: me(),
    });
    expect(older.body.items.map((a: { eventId: string }) => a.eventId)).toEqual([sent.body.eventId]);
    expect(older.body.nextCursor).toBeNull();
    const foreign = Buffer.from('import-jobs:5').toString('base64url');
    expect((await suite.api.get(`${base}/${endpointId}/attempts?cursor=${foreign}`, { headers: me() })).status).toBe(
      400,
    );
  });

  it('rotate-secret: during the overlap both secrets sign; without one only the new', async () => {
    const { endpointId, secret: first } = await created('/rotated');
    const rotated = await suite.api.post(`${base}/${endpointId}/rotate-secret`, {
      body: { overlapSeconds: 3600 },
      headers: me(),
    });
    expect(rotated.status).toBe(200);
    const second = rotated.body.secret;
    expect(second).not.toBe(first);
    expect(rotated.body.previousSecretValidUntil).not.toBeNull();
    await suite.api.post(`${base}/${endpointId}/test`, { headers: me() });
    const [overlapping] = await receiver.waitFor('/rotated', 1);
    expect(overlapping!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verifiesWith(first, overlapping!)).toBe(true);
    expect(verifiesWith(second, overlapping!)).toBe(true);

    const third = (
      await suite.api.post(`${base}/${endpointId}/rotate-secret`, { body: { overlapSeconds: 0 }, headers: me() })
    ).body.secret;
    await suite.api.post(`${base}/${endpointId}/test`, { headers: me() });
    const [, alone] = await receiver.waitFor('/rotated', 2);
    expect(matchingSignatures(third, alone!.headers, alone!.body)).toBe(1);
    expect(verifiesWith(second, alone!)).toBe(false);
    expect(alone!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
  });

  it('patch changes the URL and the events; a changed subscription decides what is queued', async () => {
    const { endpointId } = await created('/before', ['field_job.created']);
    const patched = await suite.api.request('patch', `${base}/${endpointId}`, {
      body: { url: receiver.url('/after'), events: ['import_job.completed'] },
      headers: me(),
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ url: receiver.url('/after'), events: ['import_job.completed'] });
    const empty = await suite.api.request('patch', `${base}/${endpointId}`, { body: {}, headers: me() });
    expect(empty.status).toBe(400);
    const res = await suite.api.post('/api/v1/inbound/targets', {
      body: { sourceSystem: 'crm', ...makeTargets(1, 'patched')[0] },
      headers: me(),
    });
    const [hit] = await receiver.waitFor('/after', 1, (r) => r.json?.data?.importJobId === res.body.importJobId);
    expect(hit!.json.type).toBe('import_job.completed');
    expect(receiver.received('/before')).toEqual([]);
  });

  it('maxInFlight: the operator default until set, settable on create and patch within the operator maximum', async () => {
    const theirs = bearer(other.apiKey);
    const url = `${base}/${otherEndpointId}`;
    const read = await suite.api.get(url, { headers: theirs });
    expect(read.body).toMatchObject({
      maxInFlight: suite.config.webhooks.endpointConcurrency,
      breaker: { state: 'Closed', openedAt: null, nextProbeAt: null, opensInARow: 0 },
    });
    const set = await suite.api.request('patch', url, { body: { maxInFlight: 8 }, headers: theirs });
    expect(set.status, set.text).toBe(200);
    expect(set.body.maxInFlight).toBe(8);
    const max = suite.config.webhooks.endpointConcurrencyMax;
    for (const refused of [0, max + 1, 1.5, '4']) {
      const res = await suite.api.request('patch', url, { body: { maxInFlight: refused }, headers: theirs });
      expect(res.status, `${JSON.stringify(refused)}: ${res.text}`).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(Object.keys(res.body.error.fieldErrors ?? {})).toContain('maxInFlight');
    }
    expect((await suite.api.get(url, { headers: theirs })).body.maxInFlight).toBe(8); // unchanged by the refusals
    const reset = await suite.api.request('patch', url, { body: { maxInFlight: null }, headers: theirs });
    expect(reset.body.maxInFlight).toBe(suite.config.webhooks.endpointConcurrency);

    const made = await suite.api.post(base, {
      body: { url: receiver.url('/capped'), events: ['all'], maxInFlight: 2 },
      headers: theirs,
    });
    expect(made.status, made.text).toBe(201);
    expect(made.body.maxInFlight).toBe(2);
    const over = await suite.api.post(base, {
      body: { url: receiver.url('/capped'), events: ['all'], maxInFlight: max + 1 },
      headers: theirs,
    });
    expect(over.status).toBe(400);
    expect(over.body.error.fieldErrors.maxInFlight[0]).toContain(String(max));
    expect((await suite.api.request('delete', `${base}/${made.body.endpointId}`, { headers: theirs })).status).toBe(
      204,
    );
  });

  it('disable holds deliveries, enable sends them; replay sends an event again under the same webhook-id', async () => {
    const held = (await created('/held')).endpointId;
    const witness = (await created('/witness')).endpointId;
    const disabled = await suite.api.post(`${base}/${held}/disable`, { headers: me() });
    expect(disabled.body).toMatchObject({ status: 'Disabled', disabledReason: 'disabled by the client' });
    const queued = await suite.api.post(`${base}/${held}/test`, { headers: me() });
    expect(queued.body.endpointStatus).toBe('Disabled');
    // The dispatcher has polled past the held delivery once a later one elsewhere arrived.
    const later = await suite.api.post(`${base}/${witness}/test`, { headers: me() });
    await receiver.waitFor('/witness', 1, (r) => r.json?.id === later.body.eventId);
    expect(receiver.received('/held')).toEqual([]);

    const enabled = await suite.api.post(`${base}/${held}/enable`, { headers: me() });
    expect(enabled.body.status).toBe('Active');
    const [first] = await receiver.waitFor('/held', 1);
    expect(first!.json.id).toBe(queued.body.eventId);

    const replay = await suite.api.post(`${base}/${held}/replay`, {
      body: { eventId: queued.body.eventId },
      headers: me(),
    });
    expect(replay.status).toBe(202);
    expect(replay.body).toEqual({ queued: 1, endpointStatus: 'Active' });
    const [, again] = await receiver.waitFor('/held', 2);
    expect(again!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(again!.body).toBe(first!.body);

    // Someone else's event is not the caller's to replay.
    const foreign = await suite.api.post(`${base}/${otherEndpointId}/test`, { headers: bearer(other.apiKey) });
    const refused = await suite.api.post(`${base}/${held}/replay`, {
      body: { eventId: foreign.body.eventId },
      headers: me(),
    });
    expect(refused.status).toBe(404);
  });

  it('replay-failed sends again what failed (and what was missed while disabled) since a time', async () => {
    receiver.behave('/flaky', () => ({ status: 500, body: 'down' }));
    const { endpointId } = await created('/flaky');
    const since = new Date().toISOString();
    const sent = await suite.api.post(`${base}/${endpointId}/test`, { headers: me() });
    // Two attempts (the schedule has one retry), then the delivery is Failed and the endpoint disabled.
    const endpoint = await eventually(async () => {
      const e = await suite.api.get(`${base}/${endpointId}`, { headers: me() });
      return e.body.status === 'Disabled' ? e.body : undefined;
    });
    expect(endpoint.deliveries.failed).toBe(1);
    expect(endpoint.disabledReason).toMatch(/failed 2 attempts/);

    receiver.behave('/flaky', () => ({ status: 200, body: 'ok' }));
    await suite.api.post(`${base}/${endpointId}/enable`, { headers: me() });
    const replayed = await suite.api.post(`${base}/${endpointId}/replay-failed`, { body: { since }, headers: me() });
    expect(replayed.status).toBe(202);
    expect(replayed.body).toEqual({ queued: 1, endpointStatus: 'Active' });
    const hits = await receiver.waitFor('/flaky', 3);
    expect(hits[2]!.json.id).toBe(sent.body.eventId);
    const nothingNew = await suite.api.post(`${base}/${endpointId}/replay-failed`, {
      body: { since: new Date().toISOString() },
      headers: me(),
    });
    expect(nothingNew.body.queued).toBe(0);
  });

  it('delete removes the endpoint and its history; the per-client limit is 409', async () => {
    const { endpointId } = await created('/deleted');
    await suite.api.post(`${base}/${endpointId}/test`, { headers: me() });
    await receiver.waitFor('/deleted', 1);
    const deleted = await suite.api.request('delete', `${base}/${endpointId}`, { headers: me() });
    expect(deleted.status).toBe(204);
    expect((await suite.api.get(`${base}/${endpointId}`, { headers: me() })).status).toBe(404);
    expect((await suite.api.request('delete', `${base}/${endpointId}`, { headers: me() })).status).toBe(404);

    const limited = await createClientWithKey(suite.pool, suite.demo.tenantId, 'webhooks.manage');
    for (let i = 0; i < 10; i++)
      expect((await create(`/limit-${i}`, ['all'], bearer(limited.apiKey))).status).toBe(201);
    const over = await create('/limit-10', ['all'], bearer(limited.apiKey));
    expect(over.status).toBe(409);
    expect(over.body.error).toMatchObject({ code: 'webhook_endpoint_limit', details: { limit: 10 } });
  });
});

describe('endpoint URLs are stored as they are sent: the normalised href', () => {
  let owner: { clientId: string; apiKey: string };
  const as = () => bearer(owner.apiKey);
  const hostPort = () => new URL(receiver.url('/')).host;
  const count = async () => (await suite.api.get(base, { headers: as() })).body.items.length as number;
  const post = (url: unknown) => suite.api.post(base, { body: { url, events: ['all'] }, headers: as() });
  const patch = (id: string, url: unknown) =>
    suite.api.request('patch', `${base}/${id}`, { body: { url }, headers: as() });
  const urlOf = async (id: string) => (await suite.api.get(`${base}/${id}`, { headers: as() })).body.url as string;
  const remove = (id: string) => suite.api.request('delete', `${base}/${id}`, { headers: as() });

  beforeAll(async () => {
    owner = await createClientWithKey(suite.pool, suite.demo.tenantId, 'webhooks.manage');
  });

  it('POST and PATCH take HTTP://, leading and trailing spaces, spaces in the path: stored and answered normalised', async () => {
    const cases: [string, string][] = [
      [`HTTP://${hostPort()}/Upper`, receiver.url('/Upper')],
      [` ${receiver.url('/leading-space')}`, receiver.url('/leading-space')],
      [`${receiver.url('/trailing-space')}  `, receiver.url('/trailing-space')],
      [receiver.url('/a b/./c'), receiver.url('/a%20b/c')],
    ];
    const patched = (await post(receiver.url('/to-patch'))).body.endpointId as string;
    for (const [given, href] of cases) {
      const res = await post(given);
      expect(res.status, `POST ${JSON.stringify(given)}: ${res.text}`).toBe(201);
      expect(res.body.url).toBe(href);
      expect(await urlOf(res.body.endpointId)).toBe(href);
      expect((await remove(res.body.endpointId)).status).toBe(204);
      const changed = await patch(patched, given);
      expect(changed.status, `PATCH ${JSON.stringify(given)}: ${changed.text}`).toBe(200);
      expect(changed.body.url).toBe(href);
      expect(await urlOf(patched)).toBe(href);
    }
    await remove(patched);
  });

  it('a webhook goes to the stored URL, as it was answered', async () => {
    const res = await post(` HTTP://${hostPort()}/sent as stored`);
    expect(res.status, res.text).toBe(201);
    expect(res.body.url).toBe(receiver.url('/sent%20as%20stored'));
    const sent = await suite.api.post(`${base}/${res.body.endpointId}/test`, { headers: as() });
    const [hit] = await receiver.waitFor('/sent%20as%20stored', 1);
    expect(hit!.json.id).toBe(sent.body.eventId);
    await remove(res.body.endpointId);
  });

  it('POST and PATCH refuse tabs, CR LF and other control characters: 400 fieldErrors.url, nothing stored', async () => {
    const url = receiver.url('/controlled');
    const { endpointId } = (await post(url)).body;
    const before = await count();
    for (const bad of [
      `\t${url}`,
      `${url}\t`,
      `${url}\r\nX-Injected: 1`,
      `${receiver.url('/con')}\r\ntrolled`,
      `${receiver.url('/con')}\ntrolled`,
      `${receiver.url('/con')}\u0085trolled`,
      `${receiver.url('/con')}\u007ftrolled`,
      `\u001b${url}`,
    ]) {
      for (const res of [await post(bad), await patch(endpointId, bad)]) {
        expect(res.status, `${JSON.stringify(bad)}: ${res.text}`).toBe(400);
        expect(res.body.error.code).toBe('validation_failed');
        expect(res.body.error.fieldErrors.url, JSON.stringify(bad)).toEqual([
          expect.stringMatching(/control character/),
        ]);
      }
    }
    expect(await count()).toBe(before);
    expect(await urlOf(endpointId)).toBe(url);
    await remove(endpointId);
  });

  it('refuses a URL whose href exceeds 2000 characters once percent-encoded, though the text sent is shorter', async () => {
    const root = receiver.url('/');
    const exact = root + 'x'.repeat(2000 - root.length);
    const fits = await post(exact);
    expect(fits.status, fits.text).toBe(201);
    expect(fits.body.url).toBe(exact);
    const long = `${root}${'é'.repeat(400)}`;
    for (const res of [await post(long), await patch(fits.body.endpointId, long)]) {
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.fieldErrors.url).toEqual([expect.stringMatching(/longer than 2000/)]);
    }
    expect(await urlOf(fits.body.endpointId)).toBe(exact);
    await remove(fits.body.endpointId);
  });

  it('the admin CLI stores the same normalised href and refuses what the API refuses', async () => {
    const create = (url: string) =>
      admin(suite.pool, webhookCreate, ['--client', owner.clientId, '--url', url, '--events', 'all']);
    const made = await create(' HTTPS://93.184.215.14:443/Hooks/../cli hooks');
    expect(made.url).toBe('https://93.184.215.14/cli%20hooks');
    expect(await urlOf(made.endpointId)).toBe(made.url);
    await remove(made.endpointId);
    const before = await count();
    for (const bad of [
      '\thttps://93.184.215.14/x',
      'https://93.184.215.14/x\r\ny',
      `https://93.184.215.14/${'é'.repeat(400)}`,
    ])
      await expect(create(bad), JSON.stringify(bad)).rejects.toThrow(/--url/);
    expect(await count()).toBe(before);
  });
});
