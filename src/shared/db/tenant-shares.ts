import { AppError } from '../errors.js';

// A fair queue in front of a pool's connections (issue 49): without it, one tenant's requests
// took every connection of the gateway's tenant pool first come first served, and every other
// tenant's request waited behind them until the pool's wait ran out (503 "PostgreSQL is
// unavailable"). Here one tenant holds at most its share of the connections, waits in a queue
// of its own beyond that, and is refused (429) when that queue is full or its wait runs out; a
// connection that comes free goes to the waiting tenant that holds the fewest, so a tenant
// nobody else outnumbers gets one at once, or at the next release however long the others'
// queues are. A slot here is a connection checked out: the gate never lets more be checked out
// than the pool has, so pool.connect() only ever waits for PostgreSQL itself.

export type TenantSharesOptions = {
  /** The pool's connections: the most checked out at once. */
  max: number;
  /** The most one tenant holds at once, in percent of max (at least one connection). */
  sharePercent: number;
  /** The most checkouts of one tenant waiting at once; beyond, refused at once. */
  queuePerTenant: number;
  /** How long a checkout waits in its tenant's queue before it is refused. */
  waitMs: number;
};

/** How checkouts went, for metrics: at once, after a wait, or refused (queue full, wait ran out). */
export type CheckoutOutcome = 'immediate' | 'queued' | 'queue_full' | 'wait_expired';

export type TenantSharesStats = {
  /** Checkouts by outcome since the start. */
  outcomes: Record<CheckoutOutcome, number>;
  /** Connections checked out now, and checkouts waiting now (all tenants). */
  held: number;
  waiting: number;
  /** Tenants holding their whole share now. */
  tenantsAtShare: number;
};

type Waiter = { grant: (release: () => void) => void; timer: NodeJS.Timeout };

/** The refusal of a checkout past the tenant's share: 429 with Retry-After, nothing was done. */
export const databaseShareExceeded = (reason: 'queue_full' | 'wait_expired', share: number) =>
  new AppError(
    'database_share_exceeded',
    reason === 'queue_full'
      ? `Your tenant's requests hold its share of the gateway's database connections (${share}) and as many more wait; nothing was done. Retry after Retry-After seconds.`
      : `Your tenant's requests held its share of the gateway's database connections (${share}) for as long as this one could wait; nothing was done. Retry after Retry-After seconds.`,
    null,
    { share, reason },
    1,
  );

export class TenantShares {
  readonly share: number;
  private held = 0;
  private readonly heldBy = new Map<string, number>();
  /** Each tenant's waiting checkouts in arrival order; a tenant is absent when none wait. */
  private readonly queues = new Map<string, Waiter[]>();
  private readonly outcomes: Record<CheckoutOutcome, number> = {
    immediate: 0,
    queued: 0,
    queue_full: 0,
    wait_expired: 0,
  };

  constructor(private readonly options: TenantSharesOptions) {
    this.share = Math.max(1, Math.floor((options.max * options.sharePercent) / 100));
  }

  /** Resolves with a release function once the tenant may check a connection out; rejects with databaseShareExceeded. */
  take(tenant: string): Promise<() => void> {
    if (this.held < this.options.max && this.heldOf(tenant) < this.share && !this.queues.has(tenant)) {
      this.outcomes.immediate++;
      return Promise.resolve(this.grantTo(tenant));
    }
    const queue = this.queues.get(tenant) ?? [];
    if (queue.length >= this.options.queuePerTenant) {
      this.outcomes.queue_full++;
      return Promise.reject(databaseShareExceeded('queue_full', this.share));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        grant: (release) => {
          clearTimeout(waiter.timer);
          this.outcomes.queued++;
          resolve(release);
        },
        timer: setTimeout(() => {
          this.dequeue(tenant, waiter);
          this.outcomes.wait_expired++;
          reject(databaseShareExceeded('wait_expired', this.share));
        }, this.options.waitMs),
      };
      queue.push(waiter);
      this.queues.set(tenant, queue);
    });
  }

  stats(): TenantSharesStats {
    let waiting = 0;
    for (const queue of this.queues.values()) waiting += queue.length;
    let tenantsAtShare = 0;
    for (const n of this.heldBy.values()) if (n >= this.share) tenantsAtShare++;
    return { outcomes: { ...this.outcomes }, held: this.held, waiting, tenantsAtShare };
  }

  private heldOf(tenant: string): number {
    return this.heldBy.get(tenant) ?? 0;
  }

  private grantTo(tenant: string): () => void {
    this.held++;
    this.heldBy.set(tenant, this.heldOf(tenant) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held--;
      const left = this.heldOf(tenant) - 1;
      if (left === 0) this.heldBy.delete(tenant);
      else this.heldBy.set(tenant, left);
      this.grantWaiting();
    };
  }

  /** Hands free connections to waiting tenants below their share, the one holding fewest first. */
  private grantWaiting(): void {
    while (this.held < this.options.max) {
      let next: string | undefined;
      // Map order is the order tenants started waiting: ties go to the one waiting longest.
      for (const tenant of this.queues.keys()) {
        const n = this.heldOf(tenant);
        if (n < this.share && (next === undefined || n < this.heldOf(next))) next = tenant;
      }
      if (next === undefined) return;
      const queue = this.queues.get(next)!;
      const waiter = queue.shift()!;
      // A tenant served goes to the back of the order (round robin among equals).
      this.queues.delete(next);
      if (queue.length > 0) this.queues.set(next, queue);
      waiter.grant(this.grantTo(next));
    }
  }

  private dequeue(tenant: string, waiter: Waiter): void {
    const queue = this.queues.get(tenant);
    if (!queue) return;
    const at = queue.indexOf(waiter);
    if (at >= 0) queue.splice(at, 1);
    if (queue.length === 0) this.queues.delete(tenant);
  }
}
