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

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '' }).http.port).toBe(8080);
  });
});
