import { FatalError } from './http.js';
import { parsePushOptions, usage, UsageError } from './options.js';
import { push, succeeded, type PushSummary } from './run.js';

const n = (v: number) => v.toLocaleString('en-US');

/** ", 3 requests sent again (429: 2, no answer: 1)", or nothing when none was. */
function retriesText(retries: Record<string, number>): string {
  const total = Object.values(retries).reduce((a, b) => a + b, 0);
  if (total === 0) return '';
  const why = Object.entries(retries)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([reason, count]) => `${reason}: ${n(count)}`)
    .join(', ');
  return `, ${n(total)} ${total === 1 ? 'request' : 'requests'} sent again (${why})`;
}

export function formatSummary(s: PushSummary): string {
  const lines = [
    `connect-push: ${n(s.done)} targets in ${s.seconds.toFixed(1)} s: ${n(s.accepted)} accepted, ${n(s.rejected)} rejected` +
      (s.undelivered > 0 ? `, ${n(s.undelivered)} not delivered` : ''),
    `  ${n(s.batches)} batches (≤ ${n(s.limits.maxTargets)} targets, ≤ ${n(s.limits.maxBytes)} bytes), ${n(s.importJobs)} import jobs` +
      (s.replayedBatches > 0 ? `, ${n(s.replayedBatches)} already sent by an earlier run` : '') +
      retriesText(s.retries),
  ];
  if (s.waited) lines.push(`  applied ${n(s.waited.applied)}, failed in the workers ${n(s.waited.failed)}`);
  if (s.rejectsWritten > 0)
    lines.push(`  rejected targets and reasons: ${s.rejectsPath} (${n(s.rejectsWritten)} lines)`);
  for (const failure of s.failures.slice(0, 10)) lines.push(`  not delivered: ${failure}`);
  if (s.failures.length > 10) lines.push(`  … and ${s.failures.length - 10} more batches not delivered`);
  lines.push(
    succeeded(s)
      ? 'connect-push: done'
      : s.undelivered > 0
        ? 'connect-push: FAILED: some batches were not delivered; run the same command again (nothing is sent twice)'
        : 'connect-push: finished, but not every target was taken (see the rejects file)',
  );
  return lines.join('\n');
}

async function main(): Promise<number> {
  let options;
  try {
    options = parsePushOptions(process.argv.slice(2), process.env, Boolean(process.stderr.isTTY));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`connect-push: ${err.message}\n\n${usage}\n`);
    return 2;
  }
  if (!options) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const stop = new AbortController();
  process.once('SIGINT', () => {
    process.stderr.write('\nconnect-push: interrupted; run the same command again to finish (nothing is sent twice)\n');
    stop.abort();
    process.exit(130);
  });
  try {
    const summary = await push(options, stop.signal);
    process.stdout.write(`${formatSummary(summary)}\n`);
    return succeeded(summary) ? 0 : 1;
  } catch (err) {
    process.stderr.write(`connect-push: ${err instanceof Error ? err.message : String(err)}\n`);
    return err instanceof FatalError ? 2 : 1;
  }
}

process.exitCode = await main();
