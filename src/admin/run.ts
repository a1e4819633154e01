import { ConfigError, loadConfig, type Config } from '../shared/config.js';
import { pendingMigrations } from '../shared/db/migrate.js';
import { createPool } from '../shared/db/pool.js';
import { createKafkaBus, type MessageBus } from '../shared/kafka/bus.js';
import { createLogger } from '../shared/logger.js';
import { AdminError, UsageError } from './args.js';
import type { Command } from './command.js';
import { appointmentSetStatus } from './commands/appointment.js';
import { clientCreate, clientRateLimit, clientUploadQuota } from './commands/client.js';
import { deadLetterCommands } from './commands/dead-letters.js';
import { demo } from './commands/demo.js';
import { keyCreate, keyList, keyRevoke } from './commands/key.js';
import { tenantCreate } from './commands/tenant.js';
import { trace } from './commands/trace.js';
import { webhookCommands } from './commands/webhook.js';

// Each command is typed by its own input; the table only passes parse's output on to run.
const commands: Command<unknown>[] = [
  tenantCreate,
  clientCreate,
  clientRateLimit,
  clientUploadQuota,
  keyCreate,
  keyRevoke,
  keyList,
  demo,
  appointmentSetStatus,
  ...webhookCommands,
  ...deadLetterCommands,
  trace,
];

export type Io = { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream; env: NodeJS.ProcessEnv };

const program = 'npm run --silent admin --';

export function usage(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.synopsis}\n  ${' '.repeat(width)}  ${c.summary}`);
  return [
    `Usage: ${program} <command> [options]`,
    '',
    'Commands:',
    ...lines,
    `  ${'help'.padEnd(width)}  This text.`,
    '',
    'Each command prints one JSON object on stdout (trace: a report, JSON with --json) and exits 0;',
    'errors go to stderr and exit 1',
    '(2 for a malformed command line). The database is DATABASE_URL',
    '(default postgres://postgres@127.0.0.1:5432/connect), migrated beforehand (`npm run migrate`);',
    'the admin CLI never creates or migrates one.',
    '',
  ].join('\n');
}

const commandUsage = (c: Command<unknown>) => `Usage: ${program} ${c.name} ${c.synopsis}\n  ${c.summary}\n`;

const isHelp = (arg: string | undefined) => arg === 'help' || arg === '--help' || arg === '-h';

/** Picks the command named by the leading words; the rest are its options. */
function resolve(argv: string[]): { command: Command<unknown>; args: string[] } {
  for (const command of commands) {
    const words = command.name.split(' ');
    if (words.every((w, i) => argv[i] === w)) return { command, args: argv.slice(words.length) };
  }
  const group = commands.filter((c) => c.name.split(' ')[0] === argv[0]);
  if (group.length > 0) {
    const subs = group.map((c) => c.name.split(' ')[1]).join(', ');
    throw new UsageError(
      argv[1] === undefined
        ? `${argv[0]}: missing subcommand (${subs})`
        : `${argv[0]}: unknown subcommand ${JSON.stringify(argv[1])} (${subs})`,
    );
  }
  throw new UsageError(`unknown command ${JSON.stringify(argv[0])}`);
}

/** The message of any error on one line; pg's connection errors can be AggregateErrors with no message. */
export function describeError(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) {
    return [...new Set(err.errors.map(describeError))].join('; ');
  }
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    const text = err.message || (typeof code === 'string' ? code : err.name);
    const detail = (err as { detail?: unknown }).detail;
    return (typeof detail === 'string' && detail ? `${text} (${detail})` : text).replace(/\s*\n\s*/g, ' ');
  }
  return String(err).replace(/\s*\n\s*/g, ' ');
}

const withoutPassword = (databaseUrl: string): string => {
  try {
    const url = new URL(databaseUrl);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '<unparseable DATABASE_URL>';
  }
};

/** Runs one admin command; resolves to the process exit code (0 ok, 1 error, 2 usage). */
export async function runAdmin(argv: string[], io: Io): Promise<number> {
  let command: Command<unknown> | undefined;
  let input: unknown;
  try {
    if (argv.length === 0 || (isHelp(argv[0]) && argv.length === 1)) {
      io.stdout.write(usage());
      return 0;
    }
    const resolved = resolve(argv);
    command = resolved.command;
    if (resolved.args.some(isHelp)) {
      io.stdout.write(commandUsage(command));
      return 0;
    }
    input = command.parse(resolved.args);
  } catch (err) {
    if (err instanceof UsageError) {
      const group = commands.filter((c) => c.name.split(' ')[0] === argv[0]);
      const help = command ? commandUsage(command) : group.length > 0 ? group.map(commandUsage).join('') : usage();
      io.stderr.write(`admin: ${err.message}\n\n${help}`);
      return 2;
    }
    if (err instanceof AdminError) {
      io.stderr.write(`admin: ${err.message}\n`);
      return 1;
    }
    throw err;
  }

  let config: Config;
  try {
    config = loadConfig(io.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.stderr.write(`admin: ${err.message}\n`);
    return 1;
  }

  const databaseUrl = config.database.url;
  const pool = createPool(databaseUrl, 2, 'connect-admin');
  let bus: MessageBus | undefined;
  const kafka = () => {
    bus ??= createKafkaBus({
      brokers: config.kafka.brokers,
      clientId: `${config.kafka.clientId}-admin`,
      produceTimeoutMs: config.kafka.produceTimeoutMs,
      // The command reports its own failure in one line; kafkajs's retries would bury it.
      logger: createLogger('silent', 'connect-admin', io.stderr),
      security: config.kafka.security,
      manageTopics: false,
    });
    return { bus, kafka: config.kafka };
  };
  // An idle client that loses its connection emits 'error'; the command's own query reports it.
  pool.on('error', () => undefined);
  try {
    // Never creates or migrates a database: a mistyped DATABASE_URL must not get a schema.
    let pending: string[];
    try {
      pending = await pendingMigrations(databaseUrl);
    } catch (err) {
      const missing = (err as { code?: string }).code === '3D000';
      throw new AdminError(
        `cannot use the database at ${withoutPassword(databaseUrl)}: ${describeError(err)}` +
          (missing ? ' (create and migrate it with `npm run migrate`, or check DATABASE_URL)' : ''),
      );
    }
    if (pending.length > 0) {
      throw new AdminError(
        `the database at ${withoutPassword(databaseUrl)} lacks ${pending.length} migration(s) (${pending[0]}…): ` +
          'run `npm run migrate` first, or check DATABASE_URL',
      );
    }
    const result = await command.run({ pool, warn: (m) => io.stderr.write(`admin: ${m}\n`), kafka }, input);
    io.stdout.write(command.render?.(result, input) ?? `${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (err) {
    io.stderr.write(`admin: ${describeError(err)}\n`);
    return 1;
  } finally {
    await bus?.close().catch(() => undefined);
    await pool.end().catch(() => undefined);
  }
}
