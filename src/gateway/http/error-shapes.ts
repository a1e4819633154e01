import { z } from 'zod';

// The two error bodies of spec part 7, exactly. Every field is present (null when unused).

export const standardErrorSchema = z
  .strictObject({
    error: z.strictObject({
      code: z.string().nullable().meta({ description: 'Stable machine code from the error catalogue.' }),
      message: z.string().nullable(),
      correlationId: z.string().nullable(),
      fieldErrors: z
        .record(z.string(), z.array(z.string()))
        .nullable()
        .meta({ description: 'Field name (dotted path, [n] for array items) → messages.' }),
      details: z.unknown().nullable().meta({ description: 'Additional structured information, or null.' }),
    }),
  })
  .meta({ id: 'ApiErrorResponse', description: 'Standard error shape.' });

export const connectErrorSchema = z
  .strictObject({
    error: z.strictObject({
      code: z.string().nullable(),
      message: z.string().nullable(),
      details: z.array(z.strictObject({ field: z.string().nullable(), message: z.string().nullable() })).nullable(),
      requestId: z.string().nullable(),
      correlationId: z.string().nullable(),
    }),
  })
  .meta({ id: 'ConnectApiErrorResponse', description: 'Connect error shape (job creation 400, 409, 422).' });

export type StandardErrorBody = z.infer<typeof standardErrorSchema>;
export type ConnectErrorBody = z.infer<typeof connectErrorSchema>;
