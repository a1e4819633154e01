import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createWorkerRegistry } from '../../src/workers/ops/metrics.js';
import { exposedNames } from '../support/prometheus-text.js';
import { metricNamesIn } from '../support/promql.js';

// The Grafana dashboard is built on the worker registry's names: this keeps them from drifting
// apart (a renamed metric fails here, not in an operator's empty panel).
const dashboardPath = 'ops/grafana/connect-workers.json';

type Panel = { title?: string; targets?: { expr?: string }[]; panels?: Panel[] };
const dashboard = JSON.parse(readFileSync(dashboardPath, 'utf8')) as {
  panels: Panel[];
  templating: { list: { query?: string | { query?: string } }[] };
};

/** Every PromQL text of the dashboard: panel targets (rows included) and variable queries. */
function expressions(): { where: string; expr: string }[] {
  const found: { where: string; expr: string }[] = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) if (t.expr) found.push({ where: `panel "${p.title}"`, expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels);
  for (const v of dashboard.templating.list) {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    const labelValues = q && /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,/.exec(q);
    if (labelValues) found.push({ where: 'variable', expr: labelValues[1]! });
  }
  return found;
}

describe('Grafana dashboard of the workers', () => {
  it('finds metric names in PromQL (the extraction this check relies on)', () => {
    expect(
      metricNamesIn(
        'histogram_quantile(0.99, sum by (kind, le) (rate(a_seconds_bucket{job=~"$job",x="by (y)"}[$__rate_interval])))',
      ),
    ).toEqual(['a_seconds_bucket']);
    expect(metricNamesIn('max by (group) (lag{job=~"$job"}) / on (group) sum(b_total) offset 5m')).toEqual([
      'lag',
      'b_total',
    ]);
  });

  it('uses only metric names the worker registry exposes, and every worker metric', async () => {
    const registry = createWorkerRegistry(
      { consumers: ['inbound'], webhooks: true },
      {
        consumerLag: { groups: [{ groupId: 'g', topics: ['t'] }], read: async () => [] },
        webhookQueue: async () => ({ due: 0, breakersOpen: 0 }),
        importJobsByStatus: async () => new Map(),
        deadLetters: { topics: ['t.dlq'], read: async () => new Map([['t.dlq', 0]]) },
      },
    ).registry;
    const exposed = exposedNames(await registry.metrics());
    const used = new Set<string>();
    const unknown: string[] = [];
    for (const { where, expr } of expressions()) {
      for (const name of metricNamesIn(expr)) {
        used.add(name);
        if (!exposed.has(name)) unknown.push(`${where}: ${name} (in ${expr})`);
      }
    }
    expect(unknown).toEqual([]);
    for (const name of [
      'worker_messages_total',
      'worker_apply_duration_seconds_bucket',
      'kafka_consumer_lag',
      'kafka_consumer_lag_errors_total',
      'webhook_deliveries_total',
      'webhook_queue_depth',
      'worker_inbound_chunks_total',
      'import_jobs',
      'worker_scrape_query_errors_total',
      'connect_dead_letters',
    ])
      expect(used, `the dashboard shows ${name}`).toContain(name);
  });

  it('is importable: a title, a uid, a Prometheus datasource variable and panels with positions', () => {
    const d = dashboard as unknown as Record<string, any>;
    expect(d.title).toBe('Connect workers');
    expect(d.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    expect(d.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', type: 'datasource' }));
    const ids = new Set<number>();
    for (const p of d.panels) {
      expect(p.gridPos, p.title).toMatchObject({ x: expect.any(Number), y: expect.any(Number), w: expect.any(Number) });
      expect(ids.has(p.id), `panel id ${p.id} twice`).toBe(false);
      ids.add(p.id);
    }
  });
});
