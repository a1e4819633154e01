import { z } from 'zod';
import { addressSchema, coordinatesSchema, metadataSchema, text, timeWindowSchema } from '../common-schemas.js';

// The AppointmentRequest of spec part 2: field types, required flags, allowed values and bounds
// (designed here; the spec leaves them open). Objects are closed. What the schema cannot say
// (time windows relative to "now", priority-dependent contact rules) the appointments worker
// checks after submission: see business-rules.ts.

export const serviceTypes = ['maintenance', 'repair', 'visit', 'pickup', 'inspection', 'installation'] as const;
export const priorities = ['low', 'normal', 'high', 'urgent'] as const;
export const maxPreferredTimeWindows = 5;
export const maxDescriptionLength = 4000;

export const appointmentCustomerSchema = z
  .strictObject({
    name: text(200).meta({ description: 'Customer, organisation or requesting location.' }),
    externalId: text(100).nullish().meta({ description: "The customer's id in the source system." }),
    organization: text(200).nullish(),
  })
  .meta({ id: 'AppointmentCustomer' });

export const e164Pattern = /^\+[1-9][0-9]{6,14}$/;

export const appointmentContactSchema = z
  .strictObject({
    name: text(200),
    phone: z
      .string()
      .regex(e164Pattern, 'E.164 phone number: + and 7 to 15 digits, no spaces, e.g. +4930123456')
      .nullish()
      .meta({ description: 'E.164, e.g. +4930123456.' }),
    email: z.email().max(254).nullish(),
  })
  .refine((c) => c.phone != null || c.email != null, {
    message: 'give a phone number, an email address or both',
    path: ['phone'],
  })
  .meta({ id: 'AppointmentContact', description: 'Who to ask about the request; a phone, an email or both.' });

export const appointmentLocationSchema = z
  .strictObject({
    address: addressSchema,
    coordinates: coordinatesSchema.nullish(),
  })
  .meta({ id: 'AppointmentLocation', description: 'Where the work is to be done.' });

export const serviceTypeSchema = z.enum(serviceTypes).meta({ id: 'AppointmentServiceType' });
export const prioritySchema = z.enum(priorities).meta({ id: 'AppointmentPriority' });

/** The submission body (POST /connect/v1/appointment-requests). */
export const appointmentRequestSchema = z
  .strictObject({
    externalReference: text(100).meta({
      description:
        "The source system's reference; unique per Integration Client: submitting it again answers the existing request.",
    }),
    serviceType: serviceTypeSchema,
    priority: prioritySchema.nullish().meta({ description: 'Default normal.' }),
    customer: appointmentCustomerSchema,
    contact: appointmentContactSchema,
    location: appointmentLocationSchema,
    preferredTimeWindows: z
      .array(timeWindowSchema)
      .max(maxPreferredTimeWindows)
      .nullish()
      .meta({
        description: `0 … ${maxPreferredTimeWindows} windows (ISO 8601 with offset, end after start); none: any time.`,
      }),
    description: z.string().trim().max(maxDescriptionLength).nullish(),
    metadata: metadataSchema.nullish(),
  })
  .meta({ id: 'AppointmentRequest', description: 'An appointment or service request from a source system.' });

export type AppointmentRequestInput = z.output<typeof appointmentRequestSchema>;

/** The request as stored and returned: defaults applied, every optional field present (null when absent). */
export type StoredAppointmentRequest = {
  externalReference: string;
  serviceType: (typeof serviceTypes)[number];
  priority: (typeof priorities)[number];
  customer: { name: string; externalId: string | null; organization: string | null };
  contact: { name: string; phone: string | null; email: string | null };
  location: {
    address: {
      line1: string;
      line2: string | null;
      postalCode: string | null;
      city: string;
      region: string | null;
      countryCode: string;
    };
    coordinates: { latitude: number; longitude: number } | null;
  };
  preferredTimeWindows: { start: string; end: string }[];
  description: string | null;
  metadata: Record<string, string | number | boolean | null>;
};

export function normalizeAppointmentRequest(r: AppointmentRequestInput): StoredAppointmentRequest {
  const a = r.location.address;
  return {
    externalReference: r.externalReference,
    serviceType: r.serviceType,
    priority: r.priority ?? 'normal',
    customer: {
      name: r.customer.name,
      externalId: r.customer.externalId ?? null,
      organization: r.customer.organization ?? null,
    },
    contact: { name: r.contact.name, phone: r.contact.phone ?? null, email: r.contact.email ?? null },
    location: {
      address: {
        line1: a.line1,
        line2: a.line2 ?? null,
        postalCode: a.postalCode ?? null,
        city: a.city,
        region: a.region ?? null,
        countryCode: a.countryCode,
      },
      coordinates: r.location.coordinates ?? null,
    },
    preferredTimeWindows: (r.preferredTimeWindows ?? []).map((w) => ({ start: w.start, end: w.end })),
    description: r.description ? r.description : null,
    metadata: r.metadata ?? {},
  };
}
