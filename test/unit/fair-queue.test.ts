import { describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/shared/kafka/bus.js';
import { tenantHeader } from '../../src/shared/messages.js';
import { FairQueue, type Entry } from '../../src/workers/fair-queue.js';

// Which message a worker applies next: tenants, keys and commit points (the loop that runs
// them is tested in consumer-loop.test.ts, the real broker's side in the integration tests).

let nextOffset = 0;
const msg = (
  tenant: string,
  key: string,
  opts: { bytes?: number; partition?: number; topic?: string } = {},
): InboundMessage => ({
  topic: opts.topic ?? 'work',
  partition: opts.partition ?? 0,
  offset: String(nextOffset++),
  key,
  value: Buffer.alloc(opts.bytes ?? 100),
  headers: { [tenantHeader]: tenant },
});

/** Takes and finishes messages one at a time; returns their tenants in the order served. */
function drain(queue: FairQueue, n: number): Entry[] {
  const served: Entry[] = [];
  for (let i = 0; i < n; i++) {
    const e = queue.next(0);
    if (!e) break;
    served.push(e);
    queue.done(e);
  }
  return served;
}

describe('fair queue', () => {
  it('serves two tenants with backlogs about equally by bytes, whoever was fetched first', () => {
    const q = new FairQueue();
    // A's 100 messages were fetched before B's 100 (a backlog in front).
    q.add(Array.from({ length: 100 }, (_, i) => msg('A', `a${i}`)));
    q.add(Array.from({ length: 100 }, (_, i) => msg('B', `b${i}`, { partition: 1 })));
    const first = drain(q, 40).map((e) => e.tenant);
    expect(first.filter((t) => t === 'A').length).toBe(20);
    expect(first.filter((t) => t === 'B').length).toBe(20);
  });

  it('shares by bytes, not by messages: a tenant of big messages gets fewer turns', () => {
    const q = new FairQueue();
    q.add(Array.from({ length: 50 }, (_, i) => msg('big', `g${i}`, { bytes: 1000 })));
    q.add(Array.from({ length: 50 }, (_, i) => msg('small', `s${i}`, { bytes: 100, partition: 1 })));
    const served = drain(q, 33);
    const bytes = (t: string) => served.filter((e) => e.tenant === t).reduce((n, e) => n + e.bytes, 0);
    expect(Math.abs(bytes('big') - bytes('small'))).toBeLessThanOrEqual(1000);
  });

  it('a tenant that was idle starts level with the others (no banked credit, no starvation)', () => {
    const q = new FairQueue();
    q.add(Array.from({ length: 200 }, (_, i) => msg('A', `a${i}`)));
    drain(q, 100); // A alone for a while
    q.add([msg('B', 'b0'), msg('B', 'b1'), msg('B', 'b2')]);
    const next = drain(q, 6).map((e) => e.tenant);
    expect(next.filter((t) => t === 'B')).toHaveLength(3); // B is served at once…
    expect(next.filter((t) => t === 'A').length).toBeGreaterThanOrEqual(2); // …but does not shut A out
  });

  it('keeps a key in order, one at a time; a waiting message holds only its key', () => {
    const q = new FairQueue();
    q.add([msg('A', 'k'), msg('A', 'k'), msg('A', 'other')]);
    const first = q.next(0)!;
    expect(first.message.key).toBe('k');
    const second = q.next(0)!;
    expect(second.message.key).toBe('other'); // k's next waits for the first
    expect(q.next(0)).toBeUndefined();
    q.retryAt(first, 1000); // the first waits (a backoff, its edge record)
    expect(q.next(500)).toBeUndefined(); // k stays blocked behind it
    expect(q.nextWakeup(500)).toBe(1000);
    expect(q.nextWakeup(1000)).toBeUndefined(); // ready: handed out when a slot frees, no timer
    expect(q.next(1000)).toBe(first);
    q.done(first);
    expect(q.next(1000)!.message.key).toBe('k');
  });

  it('holds every key until a retry of scope all is due (a dependency every apply needs is away)', () => {
    const q = new FairQueue();
    q.add([msg('A', 'k'), msg('B', 'other')]);
    const first = q.next(0)!;
    q.retryAt(first, 1000, 'all');
    expect(q.next(999)).toBeUndefined(); // B's message too
    expect(q.nextWakeup(999)).toBe(1000);
    expect(q.next(1000)).toBeDefined();
    expect(q.nextWakeup(1000)).toBeUndefined();
  });

  it('commits up to the oldest unapplied message of each partition', () => {
    const q = new FairQueue();
    const ms = [msg('A', 'x'), msg('A', 'y'), msg('A', 'z')];
    q.add(ms);
    expect(q.takeCommits()).toEqual([{ topic: 'work', partition: 0, offset: ms[0]!.offset }]);
    const [x, y] = [q.next(0)!, q.next(0)!];
    q.done(y);
    expect(q.takeCommits()[0]!.offset).toBe(ms[0]!.offset); // x is not applied: nothing after it counts
    q.done(x);
    const commits = q.takeCommits();
    expect(commits[0]!.offset).toBe(ms[2]!.offset);
    q.committed(commits);
    expect(q.takeCommits()).toEqual([]);
    q.done(q.next(0)!);
    expect(q.takeCommits()[0]!.offset).toBe(String(Number(ms[2]!.offset) + 1));
    expect(q.bufferedBytes('work', 0)).toBe(0);
  });

  it('after a reset, drops what is queued; a message still running keeps its key and reports no offset', () => {
    const q = new FairQueue();
    const ms = [msg('A', 'k'), msg('A', 'k')];
    q.add(ms);
    const running = q.next(0)!;
    q.reset();
    expect(q.size).toBe(1);
    // The group fetches the same messages again.
    q.add(ms.map((m) => ({ ...m })));
    expect(q.next(0)).toBeUndefined(); // k's old copy is still running
    q.done(running);
    expect(q.takeCommits()).toEqual([{ topic: 'work', partition: 0, offset: ms[0]!.offset }]);
    expect(q.next(0)!.message.offset).toBe(ms[0]!.offset); // applied again (idempotent), in order
  });

  it('ignores a batch fetched twice', () => {
    const q = new FairQueue();
    const ms = [msg('A', 'a'), msg('A', 'b')];
    q.add(ms);
    q.add(ms);
    expect(q.size).toBe(2);
  });
});
