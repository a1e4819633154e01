import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/shared/config.js';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const c = loadConfig({});
    expect(c.http.port).toBe(8080);
    expect(c.kafka.brokers).toEqual(['127.0.0.1:9092']);
    expect(c.database.url).toBe('postgres://postgres@127.0.0.1:5432/connect');
    expect(c.limits.rateLimitPerMinute).toBe(600);
    expect(c.workers.kinds).toEqual([]);
    expect(c.inbound.parseThreads).toBe(Math.max(2, availableParallelism() - 1));
  });

  it('parses lists and numbers', () => {
    const c = loadConfig({ KAFKA_BROKERS: 'a:1,b:2', PORT: '9000', WORKERS: 'inbound, materials' });
    expect(c.kafka.brokers).toEqual(['a:1', 'b:2']);
    expect(c.http.port).toBe(9000);
    expect(c.workers.kinds).toEqual(['inbound', 'materials']);
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['KAFKA_BROKERS', 'nohostport'],
    ['LOG_LEVEL', 'loud'],
    ['RATE_LIMIT_PER_MINUTE', '0'],
  ])('rejects %s=%s with one line naming the variable', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(`${name}=${JSON.stringify(value)}`);
    expect(message.split('\n')).toHaveLength(1);
  });

  it('refuses an orphan grace shorter than the produce timeout', () => {
    expect(() => loadConfig({ ORPHAN_GRACE_MS: '5000', KAFKA_PRODUCE_TIMEOUT_MS: '8000' })).toThrow(
      /^invalid configuration: ORPHAN_GRACE_MS="5000": must be greater than KAFKA_PRODUCE_TIMEOUT_MS$/,
    );
  });

  it('reads retention periods with decimals, down to about a minute, and whole ones as before', () => {
    const c = loadConfig({
      IMPORT_JOB_RETENTION_DAYS: '0.0035',
      DEAD_LETTER_RETENTION_DAYS: '0.5',
      EVENT_RETENTION_HOURS: '0.1',
    });
    expect(c.retention.importJobRetentionMs).toBe(302_400); // 5.04 minutes
    expect(c.retention.deadLetterRetentionMs).toBe(43_200_000);
    expect(c.events.retentionMs).toBe(360_000);
    const whole = loadConfig({});
    expect(whole.retention.importJobRetentionMs).toBe(90 * 86_400_000);
    expect(whole.events.retentionMs).toBe(336 * 3_600_000);
    expect(loadConfig({ IMPORT_JOB_RETENTION_DAYS: '7' }).retention.importJobRetentionMs).toBe(7 * 86_400_000);
    expect(() => loadConfig({ IMPORT_JOB_RETENTION_DAYS: '0.0001' })).toThrow(/IMPORT_JOB_RETENTION_DAYS="0.0001"/);
    expect(() => loadConfig({ EVENT_RETENTION_HOURS: '0.01' })).toThrow(/EVENT_RETENTION_HOURS="0.01"/);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '' }).http.port).toBe(8080);
  });
});
