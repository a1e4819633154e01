import { z } from 'zod';

// How one setting is declared (config.ts): a zod schema with its default and bounds, the
// environment variable it is read from and, with .describe(), the line docs/configuration.md shows.

type SettingMeta = { env: string; shownDefault?: string };

/** The schema read from variable `name`; shownDefault: what the reference says where the default is computed. */
export const env = <T extends z.ZodType>(name: string, schema: T, shownDefault?: string): T =>
  schema.meta({ env: name, ...(shownDefault ? { shownDefault } : {}) });

export const count = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
export const int = (def: number, min: number, max: number) => count(min, max).default(def);
/** A number that may have decimals (e.g. a retention of 0.0035 days). */
export const decimal = (def: number, min: number, max: number) => z.coerce.number().min(min).max(max).default(def);

export const text = (def = '', pattern?: RegExp, message?: string) =>
  (pattern ? z.string().regex(pattern, message) : z.string()).default(def);

export const oneOf = <const T extends readonly [string, ...string[]]>(values: T, def: T[number]) =>
  z.enum(values).default(def as never);

/** `true` or `false`, read as a boolean. */
export const flag = (def: 'true' | 'false') => oneOf(['true', 'false'], def).transform((v) => v === 'true');

/** A group of settings one part of the code is handed, with the line that heads its table in the reference. */
export const section = <T extends z.ZodRawShape>(description: string, shape: T) =>
  z.object(shape).describe(description);

export type Setting = { env: string; path: string[]; schema: z.ZodType; description: string; shownDefault?: string };

/** Every setting of a schema made of z.objects (each maybe refined or transformed) with env() leaves. */
export function settingsOf(schema: z.ZodType, path: string[] = []): Setting[] {
  const meta = schema.meta() as Partial<SettingMeta> | undefined;
  if (meta?.env) return [{ env: meta.env, path, schema, description: schema.description ?? '', ...meta }];
  const inner = schema instanceof z.ZodPipe ? schema.in : schema;
  if (!(inner instanceof z.ZodObject)) throw new Error(`configuration ${path.join('.')} names no variable`);
  return Object.entries(inner.shape as Record<string, z.ZodType>).flatMap(([key, s]) => settingsOf(s, [...path, key]));
}
