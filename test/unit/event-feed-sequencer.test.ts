import { describe, expect, it } from 'vitest';
import { singleFlightAfter } from '../../src/gateway/events/sequencer.js';

// The event feed's numbering per gateway (src/gateway/events/sequencer.ts): one run at a time,
// and a caller is served by a run that started after it asked. The database side (the row lock,
// the order) is tested in test/integration/event-feed-order.test.ts.

/** A sequencing stand-in whose runs the test finishes by hand. */
function manualRuns() {
  const runs: { startedAfter: number; finish: (err?: Error) => void }[] = [];
  let asked = 0;
  const sequence = () =>
    new Promise<void>((resolve, reject) => {
      runs.push({ startedAfter: asked, finish: (err) => (err ? reject(err) : resolve()) });
    });
  const call = (fn: () => Promise<void>) => {
    asked++;
    return fn();
  };
  return { runs, sequence, call };
}

const settled = () => new Promise((r) => setImmediate(r));

describe('feed sequencing, one run at a time per gateway', () => {
  it('runs at once when nothing is under way', async () => {
    const { runs, sequence, call } = manualRuns();
    const run = singleFlightAfter(sequence);
    const done = call(run);
    expect(runs).toHaveLength(1);
    runs[0]!.finish();
    await expect(done).resolves.toBeUndefined();
  });

  it('serves every caller that came during a run with one run after it', async () => {
    const { runs, sequence, call } = manualRuns();
    const run = singleFlightAfter(sequence);
    const first = call(run);
    const waiting = Array.from({ length: 10 }, () => call(run));
    let waitingDone = false;
    void Promise.all(waiting).then(() => (waitingDone = true));
    expect(runs).toHaveLength(1); // the ten wait, holding nothing
    runs[0]!.finish();
    await first;
    await settled();
    expect(waitingDone).toBe(false); // the run under way started before they asked
    expect(runs).toHaveLength(2);
    expect(runs[1]!.startedAfter).toBe(11);
    runs[1]!.finish();
    await Promise.all(waiting);
    expect(runs).toHaveLength(2);
  });

  it('a failed run fails its callers only; the next run is tried afresh', async () => {
    const { runs, sequence, call } = manualRuns();
    const run = singleFlightAfter(sequence);
    const first = call(run);
    const second = call(run);
    runs[0]!.finish(new Error('PostgreSQL away'));
    await expect(first).rejects.toThrow('PostgreSQL away');
    await settled();
    expect(runs).toHaveLength(2);
    runs[1]!.finish();
    await expect(second).resolves.toBeUndefined();
    const third = call(run);
    expect(runs).toHaveLength(3);
    runs[2]!.finish();
    await expect(third).resolves.toBeUndefined();
  });

  it('a caller arriving while the queued run waits to start joins it', async () => {
    const { runs, sequence, call } = manualRuns();
    const run = singleFlightAfter(sequence);
    const first = call(run);
    const a = call(run);
    runs[0]!.finish();
    const b = call(run); // the first run is over but the queued one has not started yet
    await first;
    await settled();
    expect(runs).toHaveLength(2);
    runs[1]!.finish();
    await Promise.all([a, b]);
    expect(runs).toHaveLength(2);
  });
});
