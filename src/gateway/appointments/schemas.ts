import { z } from 'zod';
import { metadataSchema } from '../../shared/common-schemas.js';
import { appointmentStatuses, cancellableStatuses, transitionActors } from '../../shared/appointments/statuses.js';
import { prioritySchema, serviceTypeSchema } from '../../shared/appointments/request-schema.js';

const nullableText = () => z.string().nullable();

export const appointmentStatusSchema = z.enum(appointmentStatuses).meta({
  id: 'AppointmentStatus',
  description:
    'Submitted: recorded, waiting for validation. Validated: passed the business rules (the worker moves on to ' +
    'PendingReview in the same step). PendingReview: waiting for the back office. Accepted, Scheduled, Assigned, ' +
    'InProgress, Completed: set by the back office. Rejected (business rules or back office), Cancelled (by the ' +
    'client), Failed (could not be processed) and Completed are final. The client may cancel from ' +
    `${cancellableStatuses.join(', ')}.`,
});

export const appointmentIdSchema = z.string().meta({
  description: 'Server-assigned: `apr_` + 26 characters (a ULID: sortable by creation time). Opaque to clients.',
  example: 'apr_01JD2Z8K3M4N5P6Q7R8S9T0V1W',
});

const cancellationSchema = z
  .strictObject({
    reason: z.string(),
    cancelledBy: z.string(),
    cancelledAt: z.iso.datetime().meta({ description: 'ISO 8601 UTC.' }),
  })
  .meta({ id: 'AppointmentCancellation' });

/** The record as stored and returned on read. */
export const appointmentRecordSchema = z
  .strictObject({
    id: appointmentIdSchema,
    externalReference: z.string(),
    serviceType: serviceTypeSchema,
    priority: prioritySchema,
    customer: z
      .strictObject({ name: z.string(), externalId: nullableText(), organization: nullableText() })
      .meta({ id: 'AppointmentCustomerRecord' }),
    contact: z
      .strictObject({ name: z.string(), phone: nullableText(), email: nullableText() })
      .meta({ id: 'AppointmentContactRecord' }),
    location: z
      .strictObject({
        address: z
          .strictObject({
            line1: z.string(),
            line2: nullableText(),
            postalCode: nullableText(),
            city: z.string(),
            region: nullableText(),
            countryCode: z.string(),
          })
          .meta({ id: 'AppointmentAddressRecord' }),
        coordinates: z.strictObject({ latitude: z.number(), longitude: z.number() }).nullable(),
      })
      .meta({ id: 'AppointmentLocationRecord' }),
    preferredTimeWindows: z.array(z.strictObject({ start: z.string(), end: z.string() })).meta({
      description: 'As submitted (ISO 8601 with offset); empty: any time.',
    }),
    description: nullableText(),
    metadata: metadataSchema,
    status: appointmentStatusSchema,
    statusReason: nullableText().meta({
      description: 'Why the request is Rejected, Failed or Cancelled; otherwise the back office note, or null.',
    }),
    cancellation: cancellationSchema.nullable().meta({ description: 'Set once the client cancelled.' }),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({
    id: 'AppointmentRequestRecord',
    description: 'An appointment request as stored: the submission with defaults applied, plus id and status.',
  });

export type AppointmentRecordDto = z.infer<typeof appointmentRecordSchema>;

export const appointmentStatusViewSchema = z
  .strictObject({
    id: appointmentIdSchema,
    status: appointmentStatusSchema,
    history: z
      .array(
        z
          .strictObject({
            status: appointmentStatusSchema,
            enteredAt: z.iso.datetime().meta({ description: 'When the request entered this status (UTC).' }),
            reason: nullableText().meta({ description: 'Why (always set for Rejected, Failed and Cancelled).' }),
            actor: z.enum(transitionActors).meta({
              description: 'client (submit, cancel), system (the validating worker) or back-office.',
            }),
          })
          .meta({ id: 'AppointmentStatusChange' }),
      )
      .min(1)
      .meta({ description: 'Every status the request entered, oldest first; the first is Submitted.' }),
  })
  .meta({ id: 'AppointmentRequestStatus' });

export const appointmentParamsSchema = z.strictObject({ id: appointmentIdSchema });

export const cancelRequestSchema = z
  .strictObject({
    reason: z.string().trim().min(1).max(1000).meta({ description: 'Why the request is cancelled (1–1000).' }),
    cancelledBy: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .meta({ description: 'Who cancels it in the source system (1–200), e.g. a user name.' }),
  })
  .meta({ id: 'AppointmentRequestCancellation' });

export const cancelResponseSchema = z
  .strictObject({
    id: appointmentIdSchema,
    status: z.literal('Cancelled'),
    cancelledAt: z.iso.datetime().meta({ description: 'ISO 8601 UTC; the same on every replay of the cancel.' }),
  })
  .meta({ id: 'AppointmentRequestCancelled' });

export const cancelIdempotencyKeySchema = z.uuid('must be a UUID, e.g. 3f0c2a4e-8d1b-4c5e-9f6a-7b8c9d0e1f2a');
