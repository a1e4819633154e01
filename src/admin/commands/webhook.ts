import { ConfigError, loadConfig } from '../../shared/config.js';
import {
  isWebhookEventType,
  subscriptionOf,
  webhookEventIdPattern,
  webhookEventTypes,
} from '../../shared/webhooks/event-types.js';
import { findEvent, listAttempts, replayEvent } from '../../shared/webhooks/endpoint-deliveries.js';
import {
  createEndpoint,
  eventsOut,
  findEndpoint,
  listEndpoints,
  rotateSecret,
  setEndpointStatus,
} from '../../shared/webhooks/endpoints.js';
import {
  TargetRefusedError,
  checkWebhookTarget,
  normaliseWebhookUrl,
  parseWebhookUrl,
} from '../../shared/webhooks/target-policy.js';
import {
  AdminError,
  UsageError,
  commaList,
  durationArg,
  integerArg,
  limitArg,
  parseOptions,
  required,
  uuidArg,
} from '../args.js';
import type { Command } from '../command.js';
import { tenantOfClient } from '../store.js';

// Webhook endpoints of Integration Clients, as operators manage them (clients manage their own
// through the API: gateway/webhooks). Secrets are printed once, by create and rotate-secret.

/** The webhook settings as the dispatcher reads them (the admin CLI runs with the same environment). */
function webhookSettings() {
  try {
    return loadConfig(process.env).webhooks;
  } catch (err) {
    if (err instanceof ConfigError) throw new AdminError(err.message);
    throw err;
  }
}

const allowPrivateTargets = () => webhookSettings().allowPrivateTargets;

function eventsArg(value: string): string[] | '*' {
  const names = commaList(value);
  const subscription = subscriptionOf(names);
  if (subscription === null) {
    const unknown = names.filter((n) => !isWebhookEventType(n));
    throw new AdminError(
      `${names.length === 0 ? '--events is empty' : `unknown event type(s) ${unknown.map((n) => JSON.stringify(n)).join(', ')}`}; ` +
        `valid: ${webhookEventTypes.join(', ')} (or "all" alone for every type, present and future)`,
    );
  }
  return subscription;
}

/** The API's rule, so both store the href the dispatcher sends to (and refuse the same URLs). */
function urlArg(value: string): string {
  try {
    return normaliseWebhookUrl(value);
  } catch (err) {
    if (err instanceof TargetRefusedError) throw new AdminError(`--url: ${err.message}`);
    throw err;
  }
}

function eventIdArg(value: string): string {
  const id = value.trim();
  if (!webhookEventIdPattern.test(id))
    throw new AdminError(`--event must be an event id (evt_…), got ${JSON.stringify(id)}`);
  return id;
}

export const webhookCreate: Command<{
  clientId: string;
  url: string;
  events: string[] | '*';
  maxInFlight: number | null;
}> = {
  name: 'webhook create',
  synopsis: `--client <clientId> --url <https://…> --events <type,type,…|all> [--max-in-flight <n>]`,
  summary:
    `Register a webhook endpoint of a client for event types (${webhookEventTypes.join(', ')}); prints its signing ` +
    'secret this once. The URL must be http(s) and resolve to public addresses (unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true). ' +
    '--max-in-flight: attempts in flight to it at once (default WEBHOOK_ENDPOINT_CONCURRENCY, at most WEBHOOK_ENDPOINT_CONCURRENCY_MAX).',
  parse(args) {
    const v = parseOptions(args, {
      client: { type: 'string' },
      url: { type: 'string' },
      events: { type: 'string' },
      'max-in-flight': { type: 'string' },
    });
    const clientId = uuidArg(required(v.client, 'client'), 'client');
    const maxInFlight = v['max-in-flight'];
    return {
      clientId,
      url: urlArg(required(v.url, 'url')),
      events: eventsArg(required(v.events, 'events')),
      maxInFlight: maxInFlight === undefined ? null : integerArg(maxInFlight, 'max-in-flight', 1, 1000),
    };
  },
  async run({ pool }, { clientId, url, events, maxInFlight }) {
    const { endpointConcurrencyMax } = webhookSettings();
    if (maxInFlight !== null && maxInFlight > endpointConcurrencyMax)
      throw new AdminError(
        `--max-in-flight must be at most ${endpointConcurrencyMax} (WEBHOOK_ENDPOINT_CONCURRENCY_MAX)`,
      );
    const tenantId = await tenantOfClient(pool, clientId);
    if (!tenantId) throw new AdminError(`client ${clientId} not found`);
    try {
      await checkWebhookTarget(parseWebhookUrl(url), allowPrivateTargets());
    } catch (err) {
      if (err instanceof TargetRefusedError) throw new AdminError(`--url refused: ${err.message}`);
      throw err;
    }
    const created = await createEndpoint(pool, { tenantId, clientId, url, eventTypes: events, maxInFlight });
    return {
      endpointId: created.endpointId,
      clientId,
      url,
      events: events === '*' ? ['all'] : events,
      status: 'Active',
      secret: created.secret,
      createdAt: created.createdAt,
    };
  },
};

export const webhookList: Command<{ clientId: string }> = {
  name: 'webhook list',
  synopsis: '--client <clientId>',
  summary: "List a client's webhook endpoints: status, why disabled, failures and delivery counts (never secrets).",
  parse(args) {
    const v = parseOptions(args, { client: { type: 'string' } });
    return { clientId: uuidArg(required(v.client, 'client'), 'client') };
  },
  async run({ pool }, { clientId }) {
    if (!(await tenantOfClient(pool, clientId))) throw new AdminError(`client ${clientId} not found`);
    return { endpoints: await listEndpoints(pool, clientId, webhookSettings()) };
  },
};

export const webhookRotateSecret: Command<{ endpointId: string; overlapMs: number }> = {
  name: 'webhook rotate-secret',
  synopsis: '--endpoint <endpointId> [--overlap <24h|30m|…|0>]',
  summary:
    'Give an endpoint a new signing secret (printed this once); the previous one keeps signing alongside it for ' +
    '--overlap (default 24h; 0: stops at once), so receivers can switch without missing an event.',
  parse(args) {
    const v = parseOptions(args, { endpoint: { type: 'string' }, overlap: { type: 'string' } });
    const endpointId = uuidArg(required(v.endpoint, 'endpoint'), 'endpoint');
    const overlap = v.overlap?.trim() ?? '24h';
    return { endpointId, overlapMs: overlap === '0' ? 0 : durationArg(overlap, 'overlap') };
  },
  async run({ pool }, { endpointId, overlapMs }) {
    const rotated = await rotateSecret(pool, { endpointId }, overlapMs);
    if (!rotated) throw new AdminError(`webhook endpoint ${endpointId} not found`);
    return rotated;
  },
};

const statusCommand = (verb: 'enable' | 'disable'): Command<{ endpointId: string; reason: string }> => ({
  name: `webhook ${verb}`,
  synopsis: verb === 'enable' ? '--endpoint <endpointId>' : '--endpoint <endpointId> [--reason <text>]',
  summary:
    verb === 'enable'
      ? 'Enable an endpoint again (also one disabled for failing): its waiting deliveries resume; replay what it missed.'
      : 'Disable an endpoint: nothing is delivered to it and new events are not queued for it until enabled.',
  parse(args) {
    const v =
      verb === 'enable'
        ? parseOptions(args, { endpoint: { type: 'string' } })
        : parseOptions(args, { endpoint: { type: 'string' }, reason: { type: 'string' } });
    const reason = ('reason' in v && typeof v.reason === 'string' && v.reason.trim()) || 'disabled by an operator';
    return { endpointId: uuidArg(required(v.endpoint, 'endpoint'), 'endpoint'), reason: reason.slice(0, 1000) };
  },
  async run({ pool }, { endpointId, reason }) {
    const updated = await setEndpointStatus(pool, { endpointId }, verb === 'enable' ? 'Active' : 'Disabled', reason);
    if (!updated) throw new AdminError(`webhook endpoint ${endpointId} not found`);
    return updated;
  },
});

export const webhookEnable = statusCommand('enable');
export const webhookDisable = statusCommand('disable');

export const webhookAttempts: Command<{ by: { endpointId: string } | { eventId: string }; limit: number }> = {
  name: 'webhook attempts',
  synopsis: '(--endpoint <endpointId> | --event <evt_…>) [--limit <n, default 50>]',
  summary: 'Recorded delivery attempts, newest first: outcome, HTTP status, latency, error, response snippet.',
  parse(args) {
    const v = parseOptions(args, {
      endpoint: { type: 'string' },
      event: { type: 'string' },
      limit: { type: 'string' },
    });
    if ((v.endpoint === undefined) === (v.event === undefined))
      throw new UsageError('give exactly one of --endpoint and --event');
    return {
      by:
        v.endpoint !== undefined ? { endpointId: uuidArg(v.endpoint, 'endpoint') } : { eventId: eventIdArg(v.event!) },
      limit: limitArg(v.limit, 50, 1000),
    };
  },
  async run({ pool }, { by, limit }) {
    return { attempts: await listAttempts(pool, by, limit) };
  },
};

export const webhookReplay: Command<{ eventId: string; endpointId: string | null }> = {
  name: 'webhook replay',
  synopsis: '--event <evt_…> [--endpoint <endpointId>]',
  summary:
    'Queue an event again, with the same event id (webhook-id) and body: to one endpoint of its client, or to ' +
    "every Active endpoint of the client subscribed to the event's type.",
  parse(args) {
    const v = parseOptions(args, { event: { type: 'string' }, endpoint: { type: 'string' } });
    return {
      eventId: eventIdArg(required(v.event, 'event')),
      endpointId: v.endpoint === undefined ? null : uuidArg(v.endpoint, 'endpoint'),
    };
  },
  async run({ pool, warn }, { eventId, endpointId }) {
    const event = await findEvent(pool, eventId);
    if (!event) throw new AdminError(`event ${eventId} not found`);
    if (endpointId) {
      const endpoint = await findEndpoint(pool, { endpointId });
      if (!endpoint) throw new AdminError(`webhook endpoint ${endpointId} not found`);
      if (endpoint.client_id !== event.client_id)
        throw new AdminError(`webhook endpoint ${endpointId} belongs to another client than event ${eventId}`);
      if (endpoint.status !== 'Active')
        warn(`endpoint ${endpointId} is Disabled: the replay waits until it is enabled`);
      const subscribed = eventsOut(endpoint.event_types);
      if (!subscribed.includes('all') && !subscribed.includes(event.type))
        warn(`endpoint ${endpointId} is not subscribed to ${event.type}; replaying to it anyway`);
    }
    const queued = await replayEvent(pool, event, endpointId);
    if (queued.length === 0)
      throw new AdminError(`no Active endpoint of client ${event.client_id} is subscribed to ${event.type}`);
    return { eventId, type: event.type, queued };
  },
};

export const webhookCommands = [
  webhookCreate,
  webhookList,
  webhookRotateSecret,
  webhookEnable,
  webhookDisable,
  webhookAttempts,
  webhookReplay,
] as Command<unknown>[];
