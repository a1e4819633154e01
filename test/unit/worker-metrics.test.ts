import { describe, expect, it } from 'vitest';
import type { PartitionLag } from '../../src/shared/kafka/bus.js';
import { createWorkerRegistry, type ScrapeSources } from '../../src/workers/ops/metrics.js';
import { parseSamples, samplesOf, valueOf } from '../support/prometheus-text.js';

const scrape = async (registry: { registry: { metrics(): Promise<string> } }) =>
  parseSamples(await registry.registry.metrics());

const lagOf = (rows: [string, number, number][]): PartitionLag[] =>
  rows.map(([topic, partition, lag]) => ({ topic, partition, lag }));

describe('worker metrics: outcome counters', () => {
  it('starts every kind × outcome series at 0 and counts what the loop and the dispatcher report', async () => {
    const m = createWorkerRegistry({ consumers: ['inbound', 'jobs'], webhooks: true });
    let s = await scrape(m);
    for (const kind of ['inbound', 'jobs'])
      for (const outcome of ['applied', 'failed_attempt', 'dead_lettered'])
        expect(valueOf(s, 'worker_messages_total', { kind, outcome })).toBe(0);
    expect(samplesOf(s, 'worker_messages_total', { kind: 'webhooks' })).toEqual([]); // not a consumer group
    for (const outcome of ['succeeded', 'retry_scheduled', 'gave_up', 'lease_lost'])
      expect(valueOf(s, 'webhook_deliveries_total', { outcome })).toBe(0);

    m.messages('inbound', 'applied', 3);
    m.messages('inbound', 'applied');
    m.messages('inbound', 'failed_attempt');
    m.messages('inbound', 'dead_lettered');
    m.applyDuration('inbound', 0.02);
    m.applyDuration('inbound', 3);
    m.webhookAttempt('succeeded');
    m.webhookAttempt('gave_up');
    s = await scrape(m);
    expect(valueOf(s, 'worker_messages_total', { kind: 'inbound', outcome: 'applied' })).toBe(4);
    expect(valueOf(s, 'worker_messages_total', { kind: 'inbound', outcome: 'failed_attempt' })).toBe(1);
    expect(valueOf(s, 'worker_messages_total', { kind: 'inbound', outcome: 'dead_lettered' })).toBe(1);
    expect(valueOf(s, 'worker_messages_total', { kind: 'jobs', outcome: 'applied' })).toBe(0);
    expect(valueOf(s, 'worker_apply_duration_seconds_count', { kind: 'inbound' })).toBe(2);
    expect(valueOf(s, 'worker_apply_duration_seconds_sum', { kind: 'inbound' })).toBeCloseTo(3.02);
    expect(valueOf(s, 'worker_apply_duration_seconds_bucket', { kind: 'inbound', le: '0.025' })).toBe(1);
    expect(valueOf(s, 'worker_apply_duration_seconds_bucket', { kind: 'inbound', le: '+Inf' })).toBe(2);
    expect(valueOf(s, 'webhook_deliveries_total', { outcome: 'succeeded' })).toBe(1);
    expect(valueOf(s, 'webhook_deliveries_total', { outcome: 'gave_up' })).toBe(1);
  });

  it('has a registry of its own per call, with the Node.js process metrics', async () => {
    const a = createWorkerRegistry({ consumers: ['inbound'] });
    const b = createWorkerRegistry({ consumers: ['inbound'] });
    a.messages('inbound', 'applied', 5);
    expect(valueOf(await scrape(b), 'worker_messages_total', { kind: 'inbound', outcome: 'applied' })).toBe(0);
    expect(samplesOf(await scrape(a), 'process_cpu_user_seconds_total')).toHaveLength(1);
  });

  it('has no scrape-time gauge in a process that hosts nothing they measure', async () => {
    const text = await createWorkerRegistry({ consumers: ['jobs'] }).registry.metrics();
    for (const name of ['kafka_consumer_lag', 'webhook_queue_depth', 'import_jobs'])
      expect(text).not.toContain(`# TYPE ${name} `);
  });
});

describe('worker metrics: readings at scrape time', () => {
  it('reports lag per group, topic and partition, read at each scrape', async () => {
    let lag = 7;
    const m = createWorkerRegistry(
      { consumers: ['inbound', 'jobs'] },
      {
        consumerLag: {
          groups: [
            { groupId: 'p.inbound', topics: ['p.inbound.targets'] },
            { groupId: 'p.jobs', topics: ['p.jobs'] },
          ],
          read: async (groupId) =>
            groupId === 'p.inbound'
              ? lagOf([
                  ['p.inbound.targets', 0, lag],
                  ['p.inbound.targets', 1, 0],
                ])
              : lagOf([['p.jobs', 0, 2]]),
        },
      },
    );
    let s = await scrape(m);
    expect(valueOf(s, 'kafka_consumer_lag', { group: 'p.inbound', topic: 'p.inbound.targets', partition: '0' })).toBe(
      7,
    );
    expect(valueOf(s, 'kafka_consumer_lag', { group: 'p.inbound', topic: 'p.inbound.targets', partition: '1' })).toBe(
      0,
    );
    expect(valueOf(s, 'kafka_consumer_lag', { group: 'p.jobs', topic: 'p.jobs', partition: '0' })).toBe(2);
    expect(valueOf(s, 'kafka_consumer_lag_errors_total', { group: 'p.inbound' })).toBe(0);
    lag = 0;
    s = await scrape(m);
    expect(valueOf(s, 'kafka_consumer_lag', { group: 'p.inbound', partition: '0' })).toBe(0);
  });

  it('leaves out the lag of a group whose reading fails and counts the failure in the same scrape', async () => {
    let brokerDown = false;
    const m = createWorkerRegistry(
      { consumers: ['inbound', 'jobs'] },
      {
        consumerLag: {
          groups: [
            { groupId: 'g.a', topics: ['a'] },
            { groupId: 'g.b', topics: ['b'] },
          ],
          read: async (groupId) => {
            if (brokerDown && groupId === 'g.a') throw new Error('kafka consumer lag timed out after 2000 ms');
            return lagOf([[groupId === 'g.a' ? 'a' : 'b', 0, 4]]);
          },
        },
      },
    );
    expect(samplesOf(await scrape(m), 'kafka_consumer_lag')).toHaveLength(2);
    brokerDown = true;
    const s = await scrape(m);
    expect(samplesOf(s, 'kafka_consumer_lag', { group: 'g.a' })).toEqual([]);
    expect(valueOf(s, 'kafka_consumer_lag', { group: 'g.b' })).toBe(4);
    expect(valueOf(s, 'kafka_consumer_lag_errors_total', { group: 'g.a' })).toBe(1);
    expect(valueOf(s, 'kafka_consumer_lag_errors_total', { group: 'g.b' })).toBe(0);
  });

  it('asks the broker once for scrapes that overlap', async () => {
    let reads = 0;
    let release: () => void = () => undefined;
    const m = createWorkerRegistry(
      { consumers: ['inbound'] },
      {
        consumerLag: {
          groups: [{ groupId: 'g', topics: ['t'] }],
          read: async () => {
            reads++;
            await new Promise<void>((r) => (release = r));
            return lagOf([['t', 0, 1]]);
          },
        },
      },
    );
    const both = Promise.all([m.registry.metrics(), m.registry.metrics()]);
    await new Promise((r) => setImmediate(r));
    release();
    const [first, second] = await both;
    expect(reads).toBe(1);
    for (const text of [first, second]) expect(valueOf(parseSamples(text), 'kafka_consumer_lag')).toBe(1);
  });

  it('counts import jobs not finished per status (the rest estimated), the due webhook deliveries and the open breakers', async () => {
    const sources: ScrapeSources = {
      importJobsByStatus: async () => new Map([['Processing', 3]]),
      importJobsEstimate: async () => 1_000_000,
      webhookQueue: async () => ({ due: 12, breakersOpen: 3 }),
    };
    const s = await scrape(createWorkerRegistry({ consumers: ['inbound'], webhooks: true }, sources));
    expect(Object.fromEntries(samplesOf(s, 'import_jobs').map((x) => [x.labels.status, x.value]))).toEqual({
      Queued: 0,
      Processing: 3,
    });
    expect(valueOf(s, 'import_jobs_estimated_rows')).toBe(1_000_000);
    expect(valueOf(s, 'worker_scrape_query_errors_total', { metric: 'import_jobs_estimated_rows' })).toBe(0);
    expect(valueOf(s, 'webhook_queue_depth')).toBe(12);
    expect(valueOf(s, 'webhook_endpoints_breaker_open')).toBe(3);
    expect(valueOf(s, 'webhook_breaker_transitions_total', { transition: 'opened' })).toBe(0);
    expect(valueOf(s, 'worker_scrape_query_errors_total', { metric: 'import_jobs' })).toBe(0);
  });

  it('answers a scrape whose PostgreSQL readings fail: no import_jobs, NaN depth, errors counted', async () => {
    let down = false;
    const fail = () => Promise.reject(new Error('canceling statement due to statement timeout'));
    const m = createWorkerRegistry(
      { consumers: ['inbound'], webhooks: true },
      {
        importJobsByStatus: () => (down ? fail() : Promise.resolve(new Map([['Queued', 2]]))),
        webhookQueue: () => (down ? fail() : Promise.resolve({ due: 5, breakersOpen: 0 })),
        consumerLag: { groups: [{ groupId: 'g', topics: ['t'] }], read: () => fail() },
      },
    );
    expect(valueOf(await scrape(m), 'import_jobs', { status: 'Queued' })).toBe(2);
    down = true;
    const s = await scrape(m); // does not throw
    expect(samplesOf(s, 'import_jobs')).toEqual([]);
    expect(valueOf(s, 'webhook_queue_depth')).toBeNaN();
    expect(valueOf(s, 'webhook_endpoints_breaker_open')).toBeNaN();
    expect(valueOf(s, 'worker_scrape_query_errors_total', { metric: 'import_jobs' })).toBe(1);
    expect(valueOf(s, 'worker_scrape_query_errors_total', { metric: 'webhook_queue_depth' })).toBe(1);
    expect(valueOf(s, 'kafka_consumer_lag_errors_total', { group: 'g' })).toBe(2);
    expect(valueOf(s, 'worker_messages_total', { kind: 'inbound', outcome: 'applied' })).toBe(0);
  });

  it('reports retention per table: its limit, its oldest row (0 when none), rows pruned; a failed reading leaves out that table only', async () => {
    let down = false;
    const m = createWorkerRegistry(
      { consumers: [] },
      {
        retention: {
          tables: [
            { table: 'import_jobs', limitSeconds: 7_776_000, oldestSeconds: async () => 100 },
            {
              table: 'dead_letter_actions',
              limitSeconds: 86_400,
              oldestSeconds: () => (down ? Promise.reject(new Error('kafka')) : Promise.resolve(null)),
            },
          ],
        },
      },
    );
    m.pruned('dead_letters_handled', 5);
    let s = await scrape(m);
    expect(valueOf(s, 'retention_limit_seconds', { table: 'import_jobs' })).toBe(7_776_000);
    expect(valueOf(s, 'retention_limit_seconds', { table: 'dead_letter_actions' })).toBe(86_400);
    expect(valueOf(s, 'retention_oldest_age_seconds', { table: 'import_jobs' })).toBe(100);
    expect(valueOf(s, 'retention_oldest_age_seconds', { table: 'dead_letter_actions' })).toBe(0);
    for (const table of ['import_jobs', 'dead_letter_actions'])
      expect(valueOf(s, 'retention_pruned_total', { table })).toBe(0);
    expect(valueOf(s, 'retention_pruned_total', { table: 'dead_letters_handled' })).toBe(5);
    down = true;
    s = await scrape(m);
    expect(valueOf(s, 'retention_oldest_age_seconds', { table: 'import_jobs' })).toBe(100);
    expect(samplesOf(s, 'retention_oldest_age_seconds', { table: 'dead_letter_actions' })).toEqual([]);
    expect(valueOf(s, 'worker_scrape_query_errors_total', { metric: 'retention_oldest_age_seconds' })).toBe(1);
  });
});
