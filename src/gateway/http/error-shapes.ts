import { z } from 'zod';
import { errorCatalogue } from '../../shared/errors.js';

// The two error bodies of spec part 7, exactly. Every field is present (null when unused).

export const errorCodeSchema = z.enum(Object.keys(errorCatalogue) as [string, ...string[]]).meta({
  id: 'ErrorCode',
  description: 'A stable machine code from the error catalogue (see the description of the API).',
});

export const standardErrorSchema = z
  .strictObject({
    error: z.strictObject({
      code: errorCodeSchema.nullable(),
      message: z.string().nullable(),
      correlationId: z.string().nullable(),
      fieldErrors: z.record(z.string(), z.array(z.string())).nullable().meta({
        description:
          'Field name (dotted path, [n] for array items; NUL and unpaired surrogates in names written as \\u0000, \\ud800 escapes) → messages.',
      }),
      details: z
        .record(z.string(), z.unknown())
        .nullable()
        .meta({ description: 'Additional structured information (an object whose fields the code names), or null.' }),
    }),
  })
  .meta({ id: 'ApiErrorResponse', description: 'Standard error shape.' });

export const connectErrorSchema = z
  .strictObject({
    error: z.strictObject({
      code: errorCodeSchema.nullable(),
      message: z.string().nullable(),
      details: z.array(z.strictObject({ field: z.string().nullable(), message: z.string().nullable() })).nullable(),
      requestId: z.string().nullable(),
      correlationId: z.string().nullable(),
    }),
  })
  .meta({ id: 'ConnectApiErrorResponse', description: 'Connect error shape (job creation 400, 409, 422).' });

export type StandardErrorBody = z.infer<typeof standardErrorSchema>;
export type ConnectErrorBody = z.infer<typeof connectErrorSchema>;
