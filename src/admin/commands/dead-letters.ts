import { userInfo } from 'node:os';
import { createDeadLetters, type DeadLetterFilter, type DeadLetters } from '../../shared/dead-letters/dead-letters.js';
import { deadLetterKindNames } from '../../shared/dead-letters/kinds.js';
import {
  AdminError,
  UsageError,
  commaList,
  limitArg,
  nameArg,
  parseOptions,
  required,
  timestampArg,
  uuidArg,
} from '../args.js';
import type { Command, Context } from '../command.js';

// Dead letters (docs/operations.md#dead-letters): what the workers gave up on, by kind. These
// commands read the dead-letter topics from Kafka (KAFKA_* settings) and keep their ledger of
// replays and purges in PostgreSQL.

const kindList = deadLetterKindNames.join(', ');
/** The most dead letters a --limit may ask for. */
const maxLimit = 10_000;

function deadLettersOf(ctx: Context): DeadLetters {
  if (!ctx.kafka) throw new AdminError('dead-letter commands need Kafka, and this caller has none');
  const { bus, kafka } = ctx.kafka();
  return createDeadLetters({ pool: ctx.pool, bus, kafka });
}

function kindsArg(value: string | undefined): string[] {
  if (value === undefined || value.trim() === 'all') return [];
  const names = commaList(value);
  const unknown = names.filter((n) => !deadLetterKindNames.includes(n));
  // The kinds are a fixed list, like the options: naming another is a malformed command line (exit 2).
  if (names.length === 0 || unknown.length > 0)
    throw new UsageError(`--kind must name kinds among ${kindList} (or "all"), got ${JSON.stringify(value)}`);
  return names;
}

const idPattern = /^([a-z-]+)\/(\d{1,9})\/(\d{1,18})$/;

function idArg(value: string): string {
  const id = value.trim();
  const m = idPattern.exec(id);
  if (!m || !deadLetterKindNames.includes(m[1]!))
    throw new AdminError(
      `--id must be <kind>/<partition>/<offset> with a kind among ${kindList}, got ${JSON.stringify(id)}`,
    );
  return id;
}

const filterOptions = {
  kind: { type: 'string' },
  tenant: { type: 'string' },
  client: { type: 'string' },
  record: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  'error-class': { type: 'string' },
  limit: { type: 'string' },
} as const;

const filterSynopsis =
  '[--kind <kind,…|all>] [--tenant <tenantId>] [--client <clientId>] [--record <recordId>] ' +
  '[--since <ISO time>] [--until <ISO time>] [--error-class <permanent|transient|SQLSTATE…|name>]';

type FilterValues = { [K in keyof typeof filterOptions]?: string };

function filterOf(v: FilterValues): DeadLetterFilter {
  const f: DeadLetterFilter = {
    kinds: kindsArg(v.kind),
    tenantId: v.tenant === undefined ? undefined : uuidArg(v.tenant, 'tenant'),
    clientId: v.client === undefined ? undefined : uuidArg(v.client, 'client'),
    recordId: v.record === undefined ? undefined : nameArg(v.record, 'record', 100),
    since: v.since === undefined ? undefined : timestampArg(v.since, 'since'),
    until: v.until === undefined ? undefined : timestampArg(v.until, 'until'),
    errorClass: v['error-class'] === undefined ? undefined : nameArg(v['error-class'], 'error-class', 100),
  };
  if (f.since && f.until && f.since >= f.until) throw new AdminError('--since must be before --until');
  return f;
}

export const deadLettersList: Command<{ filter: DeadLetterFilter; limit: number }> = {
  name: 'dead-letters list',
  synopsis: `${filterSynopsis} [--include-handled] [--limit <n>]`,
  summary:
    `List dead letters (oldest first) of the kinds ${kindList}: where each came from, its error and class, ` +
    'tenant, client and record. Replayed and purged ones only with --include-handled. --limit: how many to print (default 100).',
  parse(args) {
    const v = parseOptions(args, { ...filterOptions, 'include-handled': { type: 'boolean' } });
    return {
      filter: { ...filterOf(v), includeHandled: v['include-handled'] === true },
      limit: limitArg(v.limit, 100, maxLimit),
    };
  },
  async run(ctx, { filter, limit }) {
    const all = await deadLettersOf(ctx).list(filter);
    return { count: all.length, shown: Math.min(limit, all.length), deadLetters: all.slice(0, limit) };
  },
};

export const deadLettersShow: Command<{ id: string }> = {
  name: 'dead-letters show',
  synopsis: '--id <kind/partition/offset>',
  summary:
    'One dead letter in full: headers, error, origin topic/partition/offset, payload summary, and the record it ' +
    'belongs to as it is now (recordNow), replayed or purged or not.',
  parse(args) {
    const v = parseOptions(args, { id: { type: 'string' } });
    return { id: idArg(required(v.id, 'id')) };
  },
  async run(ctx, { id }) {
    const found = await deadLettersOf(ctx).show(id);
    if (!found) throw new AdminError(`dead letter ${id} not found`);
    return found;
  },
};

type ActionInput = { filter: DeadLetterFilter; execute: boolean; operator: string; note: string | null; limit: number };

/** The login name: $USER, $LOGNAME, else the account of the process's uid (none in many containers). */
function accountName(): string | null {
  const fromEnv = (process.env.USER ?? process.env.LOGNAME ?? '').trim();
  if (fromEnv) return fromEnv;
  try {
    return userInfo().username.trim() || null;
  } catch {
    return null; // a uid without a passwd entry (containers, CI)
  }
}

/**
 * Who acts: --operator, else the login name. A dry run records nothing, so it needs none; a real
 * run without any name asks for --operator (a missing option: exit 2).
 */
function operatorArg(value: string | undefined, execute: boolean): string {
  if (value !== undefined) return nameArg(value, 'operator');
  const name = accountName()?.slice(0, 200) ?? null;
  if (name) return name;
  if (execute)
    throw new UsageError('--execute records who acted: name the operator with --operator <name> ($USER is unset)');
  return '(dry run)';
}

function actionCommand(action: 'replay' | 'purge'): Command<ActionInput> {
  const what =
    action === 'replay'
      ? 'Send dead letters again to the topic they came from (the worker applies each once, by its ledger, and takes ' +
        'its record out of the failed state: docs/operations.md#dead-letters)'
      : 'Mark dead letters purged: they stay in Kafka until its retention removes them, but lists, replays and ' +
        'connect_dead_letters leave them out';
  return {
    name: `dead-letters ${action}`,
    synopsis: `(--id <id,…> | ${filterSynopsis} | --all) [--execute] [--operator <name>] [--note <text>] [--limit <n>]`,
    summary:
      `${what}. Selects dead letters not yet replayed or purged: by --id, by filters (e.g. --kind inbound --since <time>), ` +
      'or every one (--all). A dry run unless --execute: it prints what would be done. Each real run is recorded ' +
      '(operator: --operator, else $USER or the account; see `dead-letters actions`).',
    parse(args) {
      const v = parseOptions(args, {
        ...filterOptions,
        id: { type: 'string', multiple: true },
        all: { type: 'boolean' },
        execute: { type: 'boolean' },
        operator: { type: 'string' },
        note: { type: 'string' },
      });
      const filter = filterOf(v);
      const ids = v.id?.flatMap(commaList).map(idArg);
      const narrowed = Object.entries(filter).some(([k, x]) => k !== 'kinds' && x !== undefined);
      if (!ids && !narrowed && v.all !== true)
        throw new UsageError(`${action} needs --id, a filter (e.g. --since) or --all`);
      if (ids && v.all === true) throw new UsageError('--id and --all do not go together');
      const note = v.note?.trim() ?? null;
      if (note !== null && note.length > 1000) throw new AdminError('--note must be at most 1000 characters');
      return {
        filter: { ...filter, ids },
        execute: v.execute === true,
        operator: operatorArg(v.operator, v.execute === true),
        note,
        limit: limitArg(v.limit, 100, maxLimit),
      };
    },
    async run(ctx, { filter, execute, operator, note, limit }) {
      const dl = deadLettersOf(ctx);
      const result = await dl[action](filter, { execute, operator, note });
      if (filter.ids) {
        const missing = filter.ids.filter((id) => !result.deadLetters.some((d) => d.id === id));
        if (missing.length > 0)
          ctx.warn(
            `not found, or already replayed or purged (see \`dead-letters list --include-handled\`): ${missing.join(', ')}`,
          );
      }
      return {
        ...result,
        shown: Math.min(limit, result.deadLetters.length),
        deadLetters: result.deadLetters.slice(0, limit),
      };
    },
  };
}

export const deadLettersReplay = actionCommand('replay');
export const deadLettersPurge = actionCommand('purge');

export const deadLettersActions: Command<{ kinds: string[]; limit: number }> = {
  name: 'dead-letters actions',
  synopsis: '[--kind <kind,…|all>] [--limit <n>]',
  summary: 'The recorded replays and purges, newest first: who, when, which selection, how many (default 50).',
  parse(args) {
    const v = parseOptions(args, { kind: { type: 'string' }, limit: { type: 'string' } });
    return { kinds: kindsArg(v.kind), limit: limitArg(v.limit, 50, maxLimit) };
  },
  async run(ctx, { kinds, limit }) {
    return { actions: await deadLettersOf(ctx).actions(limit, kinds) };
  },
};

export const deadLetterCommands = [
  deadLettersList,
  deadLettersShow,
  deadLettersReplay,
  deadLettersPurge,
  deadLettersActions,
] as Command<unknown>[];
