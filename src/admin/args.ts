import { parseArgs, type ParseArgsConfig } from 'node:util';
import { uploadQuotaBounds } from '../shared/config.js';
import { integrationScopes, isScope, type Scope } from '../shared/scopes.js';

/** The command line is malformed (unknown command or option, missing or conflicting option): exit 2. */
export class UsageError extends Error {}
/** The command line is well formed but a value or the database says no: exit 1. */
export class AdminError extends Error {}

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** util.parseArgs in strict mode with no positionals; its complaints become UsageErrors. */
export function parseOptions<const O extends OptionsConfig>(args: string[], options: O) {
  return parseCommandLine(args, options, false).values;
}

/** parseOptions for a command that also takes positional arguments (e.g. `trace import-job <id>`). */
export function parseCommandLine<const O extends OptionsConfig>(args: string[], options: O, allowPositionals = true) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

export function required(value: string | undefined, flag: string): string {
  if (value === undefined) throw new UsageError(`missing --${flag}`);
  return value;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string): boolean => uuidPattern.test(value);

export function uuidArg(value: string, flag: string): string {
  if (!isUuid(value)) throw new AdminError(`--${flag} must be a UUID, got ${JSON.stringify(value)}`);
  return value.toLowerCase();
}

/** Names and other short texts: 1 to max characters after trimming (tenant and client names: the schema's CHECK). */
export function nameArg(value: string, flag = 'name', max = 200): string {
  const name = value.trim();
  if (name.length < 1 || name.length > max) throw new AdminError(`--${flag} must be 1 to ${max} characters`);
  return name;
}

/** An integer option from min to max, written in decimal digits (no more of them than max has). */
export function integerArg(value: string, flag: string, min: number, max: number): number {
  const n = /^\d+$/.test(value) && value.length <= String(max).length ? Number(value) : NaN;
  if (!(n >= min && n <= max))
    throw new AdminError(`--${flag} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return n;
}

/** Same bounds as the gateway's RATE_LIMIT_PER_MINUTE. */
export const maxRateLimitPerMinute = 1_000_000;

export const rateLimitArg = (value: string, flag: string) => integerArg(value, flag, 1, maxRateLimitPerMinute);

export const uploadQuotaArg = (value: string, flag: string) =>
  integerArg(value, flag, uploadQuotaBounds.min, uploadQuotaBounds.max);

/** --limit: 1 to max; byDefault when it is not given. */
export const limitArg = (value: string | undefined, byDefault: number, max: number) =>
  value === undefined ? byDefault : integerArg(value, 'limit', 1, max);

/** The names of a comma list, trimmed, without empty ones or repeats, in order. */
export const commaList = (value: string): string[] => [
  ...new Set(
    value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ),
];

/** `all` = every integration scope; empty = none; otherwise a comma list of scope names. */
export function scopesArg(value: string): Scope[] {
  const names = commaList(value);
  if (names.length === 1 && names[0] === 'all') return [...integrationScopes];
  const unknown = names.filter((n) => !isScope(n));
  if (unknown.length > 0) {
    const which = unknown.map((n) => JSON.stringify(n)).join(', ');
    throw new AdminError(
      `unknown scope${unknown.length > 1 ? 's' : ''} ${which}; valid scopes: ${integrationScopes.join(', ')} ` +
        `(or "all" alone for every scope, or "" for none)`,
    );
  }
  return sortScopes(names as Scope[]);
}

/** Distinct, in the order of spec part 5. */
export function sortScopes(scopes: readonly string[]): string[] & Scope[] {
  const order = (s: string) => {
    const i = (integrationScopes as readonly string[]).indexOf(s);
    return i === -1 ? integrationScopes.length : i;
  };
  return [...new Set(scopes)].sort((a, b) => order(a) - order(b) || a.localeCompare(b)) as string[] & Scope[];
}

const unitMs = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;
// Far enough for any real key, near enough to stay inside Date and timestamptz.
const latestExpiry = Date.UTC(9999, 11, 31);

/** `30d`, `12h`, `15m`, `90s`, `2w` → milliseconds. */
export function durationArg(value: string, flag: string): number {
  const m = /^(\d{1,9})([smhdw])$/.exec(value.trim());
  const ms = m ? Number(m[1]) * unitMs[m[2] as keyof typeof unitMs] : 0;
  if (!m || ms <= 0 || Date.now() + ms > latestExpiry) {
    throw new AdminError(
      `--${flag} must be a positive whole number followed by s, m, h, d or w (e.g. 30d, 12h, 15m), got ${JSON.stringify(value)}`,
    );
  }
  return ms;
}

const isoPattern =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-](\d{2}):?(\d{2})))?$/;

/** ISO 8601: a date (midnight UTC) or a date-time with `Z` or an offset; the calendar is checked. */
export function timestampArg(value: string, flag: string): Date {
  const m = isoPattern.exec(value.trim());
  const invalid = () =>
    new AdminError(
      `--${flag} must be an ISO 8601 date-time with a zone, e.g. 2030-01-31T12:00:00Z, got ${JSON.stringify(value)}`,
    );
  if (!m) throw invalid();
  const [, y, mo, d, hh = '0', mi = '0', ss = '0', , oh = '0', om = '0'] = m.map((v) => v ?? undefined);
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  const calendarOk =
    day.getUTCFullYear() === Number(y) && day.getUTCMonth() === Number(mo) - 1 && day.getUTCDate() === Number(d);
  if (!calendarOk || Number(hh) > 23 || Number(mi) > 59 || Number(ss) > 59 || Number(oh) > 23 || Number(om) > 59) {
    throw invalid();
  }
  const time = Date.parse(value.trim().replace(/^(\d{4}-\d{2}-\d{2})[ t]/, '$1T'));
  if (Number.isNaN(time) || time > latestExpiry) throw invalid();
  return new Date(time);
}
