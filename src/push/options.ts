import { parseArgs } from 'node:util';

/** The command line is malformed or incomplete: exit 2, nothing sent. */
export class UsageError extends Error {}

export type InputFormat = 'ndjson' | 'csv';

export type PushOptions = {
  /** A file, or null for stdin. */
  input: string | null;
  format: InputFormat;
  baseUrl: string;
  apiKey: string;
  sourceSystem: string;
  /** Upper bounds the user set; the service's documented limits apply when lower. */
  batchSize: number | null;
  batchBytes: number | null;
  concurrency: number;
  rejectsPath: string;
  wait: boolean;
  /** Progress bar (TTY) or plain lines. */
  progress: 'bar' | 'lines';
};

export const usage = `Usage: connect-push [options] [file]   (no file or -: read stdin)

Pushes targets (one JSON object per line, or CSV with a header row) to
POST /api/v1/inbound/targets/batch in batches that fit the service's documented limits.
A rerun of the same command after a crash or Ctrl-C sends nothing twice.

  --url <url>              gateway base URL (env CONNECT_URL; default http://127.0.0.1:8080)
  --api-key <key>          API key with the scope inbound.targets.batch.write, and import_jobs.read
                           for --wait (env CONNECT_API_KEY; prefer the env)
  --source-system <name>   the batches' sourceSystem (env CONNECT_SOURCE_SYSTEM) [required]
  --format ndjson|csv      default: from the file name (.csv: csv), else ndjson
  --batch-size <n>         targets per batch, at most the documented limit (default: the limit)
  --batch-bytes <n>        body bytes per batch, at most the documented limit (default: the limit)
  --concurrency <n>        batches in flight at once (default 4)
  --rejects <file>         rejected targets with reasons, NDJSON (default <file>.rejects.ndjson,
                           or connect-push.rejects.ndjson for stdin)
  --wait                   wait until every import job is final; report applied and failed
                           (checks first that the key may read import jobs)
  --plain                  plain progress lines even on a terminal
  -h, --help               this text

Exit: 0 all accepted (and applied, with --wait); 1 something rejected or failed (summary says
what); 2 at once, nothing (more) sent: usage error, or the service refused the key (401), a scope
(403, the message names it) or the limits.`;

function positiveInt(value: string | undefined, flag: string): number | null {
  if (value === undefined) return null;
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new UsageError(`--${flag} must be a positive integer, got ${value}`);
  return Number(value);
}

/** Options from the command line and the environment; null when help was asked for. */
export function parsePushOptions(args: string[], env: NodeJS.ProcessEnv, isTty: boolean): PushOptions | null {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        'api-key': { type: 'string' },
        'source-system': { type: 'string' },
        format: { type: 'string' },
        'batch-size': { type: 'string' },
        'batch-bytes': { type: 'string' },
        concurrency: { type: 'string' },
        rejects: { type: 'string' },
        wait: { type: 'boolean' },
        plain: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const { values: v, positionals } = parsed;
  if (v.help) return null;
  if (positionals.length > 1) throw new UsageError('give one input file (or none for stdin)');
  const input = positionals[0] === undefined || positionals[0] === '-' ? null : positionals[0];
  const format = v.format ?? (input?.toLowerCase().endsWith('.csv') ? 'csv' : 'ndjson');
  if (format !== 'ndjson' && format !== 'csv') throw new UsageError(`--format must be ndjson or csv, got ${format}`);
  const apiKey = v['api-key'] ?? env.CONNECT_API_KEY;
  if (!apiKey) throw new UsageError('no API key: set CONNECT_API_KEY or --api-key');
  const sourceSystem = v['source-system'] ?? env.CONNECT_SOURCE_SYSTEM;
  if (!sourceSystem) throw new UsageError('no source system: --source-system or CONNECT_SOURCE_SYSTEM');
  const baseUrl = (v.url ?? env.CONNECT_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  if (!/^https?:\/\/./.test(baseUrl)) throw new UsageError(`--url must be an http(s) URL, got ${baseUrl}`);
  return {
    input,
    format,
    baseUrl,
    apiKey,
    sourceSystem,
    batchSize: positiveInt(v['batch-size'], 'batch-size'),
    batchBytes: positiveInt(v['batch-bytes'], 'batch-bytes'),
    concurrency: positiveInt(v.concurrency, 'concurrency') ?? 4,
    rejectsPath: v.rejects ?? (input ? `${input}.rejects.ndjson` : 'connect-push.rejects.ndjson'),
    wait: v.wait ?? false,
    progress: isTty && !v.plain ? 'bar' : 'lines',
  };
}
