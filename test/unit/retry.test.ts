import { describe, expect, it } from 'vitest';
import { backoffMs, kafkajsRetry, listedDelayMs, mayRetry, retrying, schedules } from '../../src/shared/retry.js';

// The one retry module: its formula and schedules, with the expected waits written out (a test
// that computed them with backoffMs would pass whatever the formula).

describe('retry module', () => {
  it('doubles from the first wait up to the longest', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffMs(schedules.dependencyWait, n))).toEqual([
      200, 400, 800, 1600, 3200, 5000, 5000,
    ]);
    expect([1, 2, 3, 4].map((n) => backoffMs(schedules.messageRetry, n))).toEqual([400, 800, 1600, 3200]);
    expect(backoffMs(schedules.dependencyWait, 0)).toBe(200); // before any failure: the first wait
    expect(backoffMs({ baseMs: 1, maxMs: Number.MAX_SAFE_INTEGER, attempts: Infinity }, 10_000)).toBe(2 ** 20);
  });

  it('allows attempts up to the schedule, never past it', () => {
    expect(mayRetry(schedules.messageRetry, 4)).toBe(true);
    expect(mayRetry(schedules.messageRetry, 5)).toBe(false);
    expect(mayRetry(schedules.dependencyWait, 1_000_000)).toBe(true);
  });

  it('takes listed delays with ±20 % jitter, and null after the last', () => {
    const listed = [5000, 300_000];
    expect(listedDelayMs(listed, 1, () => 0)).toBe(4000);
    expect(listedDelayMs(listed, 1, () => 1)).toBe(6000);
    expect(listedDelayMs(listed, 2, () => 0.5)).toBe(300_000);
    expect(listedDelayMs(listed, 3)).toBeNull();
  });

  it('retries what it is told to, throws anything else at once, and stops waiting when aborted', async () => {
    const fast = { baseMs: 1, maxMs: 2, attempts: 3 };
    let calls = 0;
    const waits: number[] = [];
    const value = await retrying(
      fast,
      async () => {
        if (++calls < 3) throw new Error('transient');
        return 'done';
      },
      { retriable: () => true, onRetry: (_err, _n, waitMs) => waits.push(waitMs) },
    );
    expect([value, calls, waits]).toEqual(['done', 3, [1, 2]]);

    await expect(
      retrying(fast, () => Promise.reject(new Error('permanent')), { retriable: () => false }),
    ).rejects.toThrow('permanent');
    await expect(retrying(fast, () => Promise.reject(new Error('always')), { retriable: () => true })).rejects.toThrow(
      'always',
    ); // the schedule's three attempts used up

    const stopped = new AbortController();
    const slow = { baseMs: 3_600_000, maxMs: 3_600_000, attempts: Infinity };
    calls = 0;
    const gaveUp = retrying(
      slow,
      () => {
        calls++;
        return Promise.reject(new Error('away'));
      },
      { retriable: () => true, signal: stopped.signal, onRetry: () => stopped.abort() },
    );
    // Aborted during the hour's wait: the wait ends at once, the next failure is thrown.
    await expect(gaveUp).rejects.toThrow('away');
    expect(calls).toBe(2);
  });
});

describe("kafkajs's schedule", () => {
  it('is the kafkaClient row of the table, handed to kafkajs as its retry option', () => {
    expect(schedules.kafkaClient).toEqual({ baseMs: 300, maxMs: 2000, attempts: 11 });
    expect(kafkajsRetry(schedules.kafkaClient)).toEqual({ initialRetryTime: 300, maxRetryTime: 2000, retries: 10 });
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(schedules.kafkaClient, n))).toEqual([300, 600, 1200, 2000, 2000]);
  });
});
