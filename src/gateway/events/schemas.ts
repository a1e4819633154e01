import { z } from 'zod';
import { pageSizeQuery } from '../../shared/common-schemas.js';
import { webhookEnvelopeSchema, webhookEventTypes } from '../../shared/webhooks/event-types.js';
import { cursorPattern } from './cursor.js';

export const maxFeedLimit = 1000;

const cursorSchema = z.string().regex(cursorPattern, 'must be a cursor this API returned (c2.…)');

export const listEventsQuery = (maxWaitSeconds: number) =>
  z.strictObject({
    after: cursorSchema.optional().meta({
      description:
        "The `next` of the previous page (a position among the caller's own events). Absent: from the oldest event kept. " +
        "Before the caller's oldest event kept (older than the retention): 410 cursor_expired. Past its newest: 400.",
    }),
    types: z
      .string()
      .max(1000)
      .transform((v, ctx) => {
        const names = [...new Set(v.split(',').map((s) => s.trim()))];
        const unknown = names.filter((n) => !(webhookEventTypes as readonly string[]).includes(n));
        if (unknown.length > 0)
          ctx.addIssue({ code: 'custom', message: `unknown event type(s): ${unknown.join(', ')}` });
        return names;
      })
      .optional()
      .meta({
        description: `Comma-separated event types to return (default: all of ${webhookEventTypes.join(', ')}). The cursor still moves past the others.`,
        example: 'import_job.completed,import_job.failed',
      }),
    limit: pageSizeQuery(maxFeedLimit, 100),
    wait: z.coerce
      .number()
      .int()
      .min(0)
      .max(maxWaitSeconds)
      .default(0)
      .meta({
        description:
          `Seconds (0 … ${maxWaitSeconds}) to wait for an event when there is none after the cursor: the answer comes as ` +
          'soon as one is committed, else with no events when the time is up. 0: answer at once.',
      }),
  });

export const feedEventSchema = z
  .discriminatedUnion(
    'type',
    webhookEventTypes.map((t) => webhookEnvelopeSchema(t)) as unknown as [
      ReturnType<typeof webhookEnvelopeSchema>,
      ...ReturnType<typeof webhookEnvelopeSchema>[],
    ],
  )
  .meta({ id: 'FeedEvent', description: 'The same envelope a webhook carries (see the webhooks section).' });

export const eventPageSchema = z
  .strictObject({
    events: z.array(feedEventSchema).meta({ description: 'In feed order (the order events were committed).' }),
    next: cursorSchema.meta({
      description:
        "Pass as `after` for the next page; store it once the page is processed. The caller's own position: after the " +
        "page's last event, or (hasMore false) after the caller's newest event; other clients' events never move it.",
    }),
    hasMore: z.boolean().meta({ description: 'true: more events are there now; ask again at once.' }),
  })
  .meta({ id: 'EventPage' });
