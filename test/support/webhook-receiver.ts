import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { Webhook } from 'standardwebhooks';
import { eventually } from './kafka.js';

// A real HTTP receiver for webhook tests (node:http on 127.0.0.1, any free port), an independent
// Standard Webhooks verifier, and a validator of bodies against the OpenAPI `webhooks` section.

export type Received = {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** performance.now() when the request's body had arrived. */
  at: number;
  json: any;
};

/** What the receiver answers the n-th request (1-based) on a path; 'hold' keeps it open. */
export type Reply = { status: number; body?: string; delayMs?: number } | 'hold';
export type Behaviour = (n: number, request: Received) => Reply;

export async function startWebhookReceiver() {
  const received: Received[] = [];
  const behaviours = new Map<string, Behaviour>();
  const held = new Map<http.ServerResponse, string>(); // held-open responses and their paths
  let open = 0; // requests not answered yet (their response neither sent nor closed)
  let peakOpen = 0;
  const server = http.createServer((req, res) => {
    open++;
    peakOpen = Math.max(peakOpen, open);
    res.once('close', () => open--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const r: Received = { path: req.url ?? '/', headers, body, at: performance.now(), json };
      received.push(r);
      const n = received.filter((x) => x.path === r.path).length;
      const reply = behaviours.get(r.path)?.(n, r) ?? { status: 200, body: 'ok' };
      if (reply === 'hold') {
        held.set(res, r.path);
        res.on('close', () => held.delete(res));
        return;
      }
      const send = () => {
        if (!res.destroyed) res.writeHead(reply.status, { 'content-type': 'text/plain' }).end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const on = (path: string) => received.filter((r) => r.path === path);
  return {
    port,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    /** Sets how a path answers (default: 200 "ok"). */
    behave(path: string, behaviour: Behaviour) {
      behaviours.set(path, behaviour);
    },
    received: (path?: string) => (path === undefined ? [...received] : on(path)),
    /** Waits until `count` requests on the path match (default all). */
    async waitFor(path: string, count: number, match: (r: Received) => boolean = () => true, timeoutMs = 30_000) {
      return eventually(
        () => {
          const hits = on(path).filter(match);
          return hits.length >= count ? hits : undefined;
        },
        timeoutMs,
        `${count} webhook request(s) on ${path}`,
      );
    },
    /** Requests open now (arrived, not answered yet), and the most open at once since start. */
    openCount: () => open,
    peakOpen: () => peakOpen,
    /** Requests held open now (on one path, or on all). */
    heldCount: (path?: string) => [...held.values()].filter((p) => path === undefined || p === path).length,
    /** Answers the held request that arrived first (false: none held). */
    releaseOne(status = 200): boolean {
      const first = held.keys().next();
      if (first.done) return false;
      held.delete(first.value);
      if (!first.value.destroyed) first.value.writeHead(status).end('released');
      return true;
    },
    /** Answers every held request. */
    release(status = 200) {
      for (const res of held.keys()) if (!res.destroyed) res.writeHead(status).end('released');
      held.clear();
    },
    async close() {
      for (const res of held.keys()) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

/**
 * An independent Standard Webhooks verifier, written from the specification and not from the
 * library: the secret is base64 after "whsec_"; the signed content is `${id}.${timestamp}.${body}`;
 * webhook-signature is a space-separated list of `v1,<base64 HMAC-SHA256>`; any one matching
 * verifies the message, and the timestamp must be within the tolerance of now.
 * Returns how many of the header's signatures match the secret.
 */
export function matchingSignatures(
  secret: string,
  headers: Record<string, string>,
  body: string,
  toleranceSeconds = 300,
) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp)) return 0;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return 0;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest();
  return signatures.split(' ').filter((entry) => {
    const [version, signature] = entry.split(',');
    if (version !== 'v1' || !signature) return false;
    const given = Buffer.from(signature, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }).length;
}

/** Both verifiers: ours (independent) and the standardwebhooks library's; true only when both accept. */
export function verifiesWith(secret: string, r: Received): boolean {
  const ours = matchingSignatures(secret, r.headers, r.body) > 0;
  let library = true;
  try {
    new Webhook(secret).verify(r.body, r.headers);
  } catch {
    library = false;
  }
  if (ours !== library) throw new Error(`verifiers disagree: ours ${ours}, library ${library}`);
  return ours;
}

/** Validates a body against the OpenAPI document's webhooks section for its type. */
export function webhookBodyValidator(doc: object) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addSchema(doc, 'openapi');
  return (body: { type: string }) => {
    const validate = ajv.compile({
      $ref: `openapi#/webhooks/${body.type}/post/requestBody/content/application~1json/schema`,
    });
    const valid = validate(body);
    return valid ? [] : (validate.errors ?? []);
  };
}
