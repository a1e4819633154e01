import { readFileSync } from 'node:fs';

/** Compose durations as written in docker-compose.yml ("20s", "1m30s", "500ms"), in ms. */
export function composeDurationMs(text: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|us|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) throw new Error(`not a duration: ${text}`);
  return parts.reduce((ms, [, n, unit]) => ms + Number(n) * units[unit!]!, 0);
}

/** The `--stop-timeout <s>` docs/deployment.md tells `docker run` users to give, in seconds. */
export function documentedStopTimeoutSeconds(): number {
  const found = /--stop-timeout (\d+)/.exec(readFileSync('docs/deployment.md', 'utf8'));
  if (!found) throw new Error('docs/deployment.md names no `docker run --stop-timeout`');
  return Number(found[1]);
}
