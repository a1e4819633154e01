import { z } from 'zod';
import { pageSizeQuery } from '../../shared/common-schemas.js';
import { pageCursor } from '../../shared/page-cursor.js';
import { endpointCountLimit } from '../../shared/webhooks/endpoints.js';
import { TargetRefusedError, maxWebhookUrlLength, normaliseWebhookUrl } from '../../shared/webhooks/target-policy.js';
import { webhookEventIdPattern, webhookEventTypes } from '../../shared/webhooks/event-types.js';

// Webhook endpoints as a client manages its own (scope webhooks.manage).

/** The longest overlap of a rotated secret: a week. */
export const maxOverlapSeconds = 7 * 24 * 3600;

export const eventNamesSchema = z
  .array(z.enum([...webhookEventTypes, 'all']))
  .min(1)
  .max(webhookEventTypes.length)
  .refine((names) => !names.includes('all') || names.length === 1, { message: '"all" must be given alone' })
  .meta({
    description: `Event types to receive: any of ${webhookEventTypes.join(', ')}; or ["all"] alone for every type, present and future.`,
    example: ['import_job.completed', 'import_job.failed'],
  });

/** The URL's form is a field error here; the handler gets the normalised href, stored and sent as it is. */
const urlSchema = z
  .string()
  .min(1)
  .max(maxWebhookUrlLength)
  .transform((value, ctx) => {
    try {
      return normaliseWebhookUrl(value);
    } catch (err) {
      if (!(err instanceof TargetRefusedError)) throw err;
      ctx.addIssue({ code: 'custom', message: err.message });
      return z.NEVER;
    }
  })
  .meta({
    description:
      'http(s) URL the events are POSTed to. It must resolve to public addresses only (no loopback, private, ' +
      'link-local … ranges), carry no credentials, no #fragment and no control characters. Stored and answered ' +
      'normalised, as the events are sent to it (WHATWG URL href): e.g. " HTTPS://Example.com:443/a b" becomes ' +
      '"https://example.com/a%20b"; at most 2000 characters also once normalised.',
  });

const maxInFlightSchema = z
  .number()
  .int()
  .min(1)
  .max(1000)
  .nullable()
  .meta({
    description:
      'Attempts in flight to this endpoint at once, across all dispatchers: its share of delivery capacity. At most ' +
      "the operator's WEBHOOK_ENDPOINT_CONCURRENCY_MAX (16 by default; 400 validation_failed above it); null or " +
      "absent: the operator's default, WEBHOOK_ENDPOINT_CONCURRENCY (4). Raise it for a receiver that answers " +
      'slowly but takes many requests at once.',
    example: 8,
  });

export const createEndpointBody = z
  .strictObject({ url: urlSchema, events: eventNamesSchema, maxInFlight: maxInFlightSchema.optional() })
  .meta({ id: 'WebhookEndpointCreate' });

export const updateEndpointBody = z
  .strictObject({
    url: urlSchema.optional(),
    events: eventNamesSchema.optional(),
    maxInFlight: maxInFlightSchema.optional(),
  })
  .refine((b) => b.url !== undefined || b.events !== undefined || b.maxInFlight !== undefined, {
    message: 'give url, events, maxInFlight or several',
  })
  .meta({ id: 'WebhookEndpointUpdate' });

export const rotateSecretBody = z
  .strictObject({
    overlapSeconds: z.number().int().min(0).max(maxOverlapSeconds).default(86_400).meta({
      description: 'How long the previous secret keeps signing beside the new one (0: stops at once). Default a day.',
    }),
  })
  .meta({ id: 'WebhookSecretRotate' });

export const replayBody = z
  .strictObject({ eventId: z.string().regex(webhookEventIdPattern, 'must be an event id (evt_…)') })
  .meta({ id: 'WebhookReplay' });

export const replayFailedBody = z
  .strictObject({
    since: z.iso.datetime().meta({ description: 'Events recorded at or after this time (ISO 8601 UTC).' }),
  })
  .meta({ id: 'WebhookReplayFailed' });

export const endpointParams = z.strictObject({ endpointId: z.uuid() });

export const attemptsCursor = pageCursor('webhook-attempts');

export const attemptsQuery = (maxTake: number) =>
  z.strictObject({
    eventId: z.string().regex(webhookEventIdPattern, 'must be an event id (evt_…)').optional(),
    limit: pageSizeQuery(maxTake, 50),
    cursor: attemptsCursor.query(),
  });

const count = () => z.number().int().min(0);

export const endpointSchema = z
  .strictObject({
    endpointId: z.uuid(),
    clientId: z.uuid(),
    url: z.string().meta({ description: 'Where the events are POSTed: the normalised URL (WHATWG href).' }),
    events: z.array(z.string()).meta({ description: 'Subscribed types; ["all"]: every type.' }),
    status: z.enum(['Active', 'Disabled']),
    disabledReason: z.string().nullable(),
    disabledAt: z.iso.datetime().nullable(),
    consecutiveFailures: count().meta({ description: 'Failed attempts since the last success.' }),
    maxInFlight: z.number().int().min(1).meta({
      description:
        'Attempts in flight to this endpoint at once (the one set, or the operator default; never above the operator maximum).',
    }),
    breaker: z
      .strictObject({
        state: z.enum(['Closed', 'Open', 'HalfOpen']).meta({
          description:
            'Closed: deliveries go out. Open: the endpoint failed WEBHOOK_BREAKER_FAILURES (5) attempts in a row; ' +
            'nothing is sent to it until nextProbeAt, its deliveries wait without using up their retries. HalfOpen: ' +
            'one delivery at a time goes out as a probe; a success closes the breaker, a failure opens it again for ' +
            'twice as long (30 s doubling to 15 min by default).',
        }),
        openedAt: z.iso.datetime().nullable().meta({ description: 'When it opened (first of the opens in a row).' }),
        nextProbeAt: z.iso
          .datetime()
          .nullable()
          .meta({ description: 'When (Open) or since when (HalfOpen) a probe may go out.' }),
        opensInARow: count().meta({ description: 'Opens since the last success: the wait doubles with each.' }),
      })
      .meta({ id: 'WebhookEndpointBreaker', description: "The endpoint's circuit breaker." }),
    lastSuccessAt: z.iso.datetime().nullable(),
    lastFailureAt: z.iso.datetime().nullable(),
    secretRotatedAt: z.iso.datetime().nullable(),
    previousSecretValidUntil: z.iso
      .datetime()
      .nullable()
      .meta({ description: 'While set, the previous secret signs too (a second signature).' }),
    deliveries: z.strictObject({ pending: count(), delivering: count(), succeeded: count(), failed: count() }).meta({
      id: 'WebhookDeliveryCounts',
      description: `Deliveries kept (EVENT_RETENTION_HOURS) by status, each counted up to ${endpointCountLimit} (that figure means at least as many).`,
    }),
    failedAttempts: count().meta({
      description: `Attempts that did not succeed, of the deliveries kept, counted up to ${endpointCountLimit}.`,
    }),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'WebhookEndpoint', description: 'An endpoint without its secret (shown only on create and rotate).' });

export const endpointListSchema = z
  .strictObject({ items: z.array(endpointSchema) })
  .meta({ id: 'WebhookEndpointList' });

const secretSchema = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/]{43}=$/)
  .meta({
    description: 'The signing secret (whsec_ + base64 of 32 bytes). Shown this once: store it now.',
  });

export const createdEndpointSchema = endpointSchema
  .extend({ secret: secretSchema })
  .meta({ id: 'WebhookEndpointCreated', description: 'The new endpoint with its signing secret.' });

export const rotatedSecretSchema = z
  .strictObject({
    endpointId: z.uuid(),
    secret: secretSchema,
    rotatedAt: z.iso.datetime(),
    previousSecretValidUntil: z.iso.datetime().nullable(),
  })
  .meta({ id: 'WebhookSecretRotated' });

export const attemptSchema = z
  .strictObject({
    attemptId: z.number().int().min(1).meta({ format: 'int64' }),
    eventId: z.string(),
    type: z.string(),
    endpointId: z.uuid(),
    attempt: z.number().int().min(1).meta({ description: 'Numbers every attempt of this delivery, replays included.' }),
    outcome: z.enum(['Succeeded', 'HttpError', 'Timeout', 'NetworkError', 'Refused']),
    statusCode: z.number().int().nullable(),
    latencyMs: count(),
    error: z.string().nullable(),
    responseSnippet: z.string().nullable().meta({ description: 'The first 500 bytes of the response body.' }),
    startedAt: z.iso.datetime(),
    finishedAt: z.iso.datetime(),
    deliveryStatus: z.enum(['Pending', 'Delivering', 'Succeeded', 'Failed']),
  })
  .meta({ id: 'WebhookAttempt' });

export const attemptListSchema = z
  .strictObject({
    items: z.array(attemptSchema).meta({ description: 'Newest first.' }),
    nextCursor: z.string().nullable().meta({
      description: 'Pass as `cursor` (with the same eventId) for the older attempts after these; null: no more.',
    }),
  })
  .meta({ id: 'WebhookAttemptList' });

export const queuedSchema = z
  .strictObject({
    queued: count().meta({ description: 'Deliveries queued (each goes out with its original webhook-id and body).' }),
    endpointStatus: z.enum(['Active', 'Disabled']).meta({ description: 'Disabled: they wait until it is enabled.' }),
  })
  .meta({ id: 'WebhookReplayQueued' });

export const testEventSchema = z
  .strictObject({
    eventId: z.string().regex(webhookEventIdPattern),
    type: z.literal('webhook.test'),
    endpointStatus: z.enum(['Active', 'Disabled']),
  })
  .meta({ id: 'WebhookTestQueued' });
