import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createGatewayMetrics } from '../../src/gateway/ops/metrics.js';
import { createWorkerRegistry } from '../../src/workers/ops/metrics.js';
import { exposedNames } from '../support/prometheus-text.js';
import { promtool } from '../support/promtool.js';
import { metricNamesIn } from '../support/promql.js';

// The alerting rules (ops/prometheus/alerts.yml): valid for Prometheus, their unit tests
// (alerts.test.yml) pass, each alert has a test, a summary, a description and a runbook section,
// and they select only names the processes expose.
const dir = 'ops/prometheus';
type Rule = { alert?: string; record?: string; expr: string; annotations?: Record<string, string> };
const rules = (parse(readFileSync(`${dir}/alerts.yml`, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (g) => g.rules,
);
const alerts = rules.filter((r) => r.alert);
const tests = parse(readFileSync(`${dir}/alerts.test.yml`, 'utf8')) as {
  tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
};

/** Metric names the rules may select that no Connect process defines itself. */
const external = new Map([
  ['up', "Prometheus's own series per scrape target"],
  ['connect_dead_letters', 'dead-letter topic depth, from the dead-letter commands (issue 27)'],
]);

/** GitHub's anchor of a Markdown heading. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

/** Runs promtool in ops/prometheus and expects it to succeed; skips the test (saying why) without promtool. */
function expectPromtool(ctx: { skip(note?: string): void }, args: string[], success: string): void {
  const found = promtool();
  if (!('path' in found)) {
    console.warn(`prometheus-alerts: skipped: ${found.missing}`);
    return ctx.skip(found.missing);
  }
  const r = spawnSync(found.path, args, { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  const output = `${r.stdout}${r.stderr}`;
  expect(r.status, output).toBe(0);
  expect(output).toContain(success);
}

describe('alerting rules', () => {
  it('pass `promtool check rules`', (ctx) => {
    expectPromtool(ctx, ['check', 'rules', 'alerts.yml'], `SUCCESS: ${rules.length} rules found`);
  });

  it('pass their unit tests (`promtool test rules alerts.test.yml`)', (ctx) => {
    expectPromtool(ctx, ['test', 'rules', 'alerts.test.yml'], 'SUCCESS');
  });

  it('each alert is tested firing and quiet, and has a summary, a description and a runbook section', () => {
    const evaluations = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    const headings = new Set(
      [...readFileSync('docs/operations.md', 'utf8').matchAll(/^#{2,4} (.+)$/gm)].map((m) => anchor(m[1]!)),
    );
    for (const { alert, annotations } of alerts) {
      const of = evaluations.filter((e) => e.alertname === alert);
      expect(
        of.some((e) => e.exp_alerts.length > 0),
        `${alert} fires in a test`,
      ).toBe(true);
      expect(
        of.some((e) => e.exp_alerts.length === 0),
        `${alert} stays quiet in a test`,
      ).toBe(true);
      expect(annotations?.summary, alert).toBeTruthy();
      expect(annotations?.description, alert).toBeTruthy();
      const [path, section] = (annotations?.runbook_url ?? '').split('#');
      expect(path, alert).toBe('docs/operations.md');
      expect(headings, `${alert}: runbook section #${section}`).toContain(section);
    }
  });

  it('select only metric names the gateway and the workers expose', async () => {
    const gateway = createGatewayMetrics();
    gateway.watchDependencies(async () => ({}));
    const worker = createWorkerRegistry(
      { consumers: ['inbound'], webhooks: true },
      {
        consumerLag: { groups: [{ groupId: 'g', topics: ['t'] }], read: async () => [] },
        webhookQueue: async () => ({ due: 0, breakersOpen: 0 }),
        importJobsByStatus: async () => new Map(),
        retention: {
          tables: [
            { table: 'import_jobs', limitSeconds: 90 * 86_400, oldestSeconds: async () => null },
            { table: 'dead_letter_actions', limitSeconds: 90 * 86_400, oldestSeconds: async () => null },
          ],
        },
        readiness: async () => ({ ready: true, state: 'running', checks: {} as never }),
      },
    );
    const exposed = new Set([
      ...exposedNames(await gateway.registry.metrics()),
      ...exposedNames(await worker.registry.metrics()),
      ...rules.flatMap((r) => (r.record ? [r.record] : [])),
      ...external.keys(),
    ]);
    const unknown = rules.flatMap((r) =>
      metricNamesIn(r.expr)
        .filter((name) => !exposed.has(name))
        .map((name) => `${r.alert ?? r.record}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });
});
