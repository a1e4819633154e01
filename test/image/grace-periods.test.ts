import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/shared/config.js';
import { composeDurationMs, documentedStopTimeoutSeconds } from './grace.js';

// Issue 30: every runtime gives a stopping process more time than SHUTDOWN_TIMEOUT_MS, after which
// the process exits by itself; a shorter grace period kills a process still finishing a request
// (exit 137). Docker's own default is 10 s, below the 15 s default timeout, so the documented
// `docker run --stop-timeout` (which the image test uses) must cover it; compose's
// stop_grace_period here, Kubernetes' terminationGracePeriodSeconds in k8s-manifests.test.ts.
type ComposeService = { command?: string[]; environment?: Record<string, string>; stop_grace_period?: string };

const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
};
const shutdownMs = (env: Record<string, string> = {}) =>
  loadConfig({ SHUTDOWN_TIMEOUT_MS: env.SHUTDOWN_TIMEOUT_MS || undefined }).service.shutdownTimeoutMs;

describe('grace periods', () => {
  it('compose gives the gateway and the workers more than their shutdown timeout', () => {
    const longRunning = ['gateway', 'worker'];
    for (const name of longRunning) {
      const service = compose.services[name]!;
      expect(service.stop_grace_period, `${name}: stop_grace_period`).toBeDefined();
      expect(composeDurationMs(service.stop_grace_period!), name).toBeGreaterThan(shutdownMs(service.environment));
    }
  });

  it('the documented docker run --stop-timeout, and the Dockerfile, cover the default shutdown timeout', () => {
    const seconds = documentedStopTimeoutSeconds();
    expect(seconds * 1000).toBeGreaterThan(shutdownMs());
    expect(readFileSync('Dockerfile', 'utf8')).toContain(`--stop-timeout ${seconds}`);
  });

  it('reads compose durations', () => {
    expect(composeDurationMs('20s')).toBe(20_000);
    expect(composeDurationMs('1m30s')).toBe(90_000);
    expect(() => composeDurationMs('20 seconds')).toThrow(/not a duration/);
  });
});
