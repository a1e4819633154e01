/**
 * Groups work handed in one at a time into batches, each done in one call (one transaction, one
 * statement): group commit. The first item starts a batch at once (after the current turn of the
 * event loop, so items handed in together go together); items handed in while `concurrency`
 * batches are under way wait and make up the next one (at most `max` each). So a lone item waits
 * for nothing, and under load an item waits at most for the batch before it, whose round trips
 * its batch then shares with everything that finished meanwhile (issue 50: one transaction per
 * attempt made PostgreSQL round trips, not the receivers, the dispatcher's limit).
 *
 * `run` settles every item of a batch (in the items' order: each its result or its error), or
 * fails the whole batch: each item's promise then rejects with that error.
 */
export class Batcher<I, R> {
  private readonly waiting: { item: I; resolve: (r: R) => void; reject: (err: unknown) => void }[] = [];
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly run: (items: I[]) => Promise<PromiseSettledResult<R>[]>,
    private readonly limits: { max: number; concurrency: number },
  ) {}

  submit(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Items waiting for a batch (not those in one under way). */
  queued(): number {
    return this.waiting.length;
  }

  private schedule() {
    if (this.scheduled || this.running >= this.limits.concurrency) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.start();
    });
  }

  private start() {
    while (this.running < this.limits.concurrency && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.limits.max);
      this.running++;
      void this.run(batch.map((b) => b.item))
        .then(
          (results) =>
            batch.forEach((b, i) => {
              const r = results[i]!;
              if (r.status === 'fulfilled') b.resolve(r.value);
              else b.reject(r.reason);
            }),
          (err: unknown) => batch.forEach((b) => b.reject(err)),
        )
        .finally(() => {
          this.running--;
          if (this.waiting.length > 0) this.schedule();
        });
    }
  }
}
