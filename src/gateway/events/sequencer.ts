// One feed-sequencing run at a time per gateway. Numbering takes event_feed_head's row lock on a
// connection of the small unscoped pool that authentication, rate limits and health share; if
// every long-poll reader numbered on its own, readers queued on that lock would hold those
// connections and other tenants' requests would queue behind them. Here a reader waits on a
// promise instead, holding nothing: whoever comes while a run is under way shares the one run
// after it (it must start after they asked, to see what they were woken for).

/** Returns a function that runs `sequence` for its caller, shared with every caller that
 *  arrived while the previous run was under way. */
export function singleFlightAfter(sequence: () => Promise<unknown>): () => Promise<void> {
  let current: Promise<void> | null = null;
  let queued: Promise<void> | null = null;
  const start = (): Promise<void> => {
    const run: Promise<void> = sequence()
      .then(() => undefined)
      .finally(() => {
        if (current === run) current = null;
      });
    current = run;
    return run;
  };
  return () => {
    if (queued) return queued;
    if (!current) return start();
    const after = current.catch(() => undefined);
    queued = after.then(() => {
      queued = null;
      return start();
    });
    return queued;
  };
}
