import pg from 'pg';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { renewLeases } from './sql.js';

/**
 * Renews the leases of the deliveries a dispatcher has in hand (claimed, being sent, outcome
 * being recorded) every third of a lease, so a lease never runs out under a live dispatcher
 * whose recording is slow (a pool wait, a lock, PostgreSQL briefly away): another dispatcher
 * takes a delivery over only when its holder stopped renewing (it died, or lost PostgreSQL for a
 * whole lease). That is what keeps a success from being sent again (issue 50).
 *
 * Only leases set half a lease ago or more are renewed, counted from hold() (the claim set the
 * lease moments before, the beginning sets it again after) or from the last renewal that returned
 * them: a younger one outlasts the next tick by a sixth of a lease (2.5 s by default), less those
 * moments. Most attempts are recorded within their timeout, so their
 * leases are never renewed; before, every tick rewrote every lease held, in bench:webhooks'
 * outage 768 rows each 5 s per dispatcher, about as many row writes as the attempts' own.
 *
 * On a connection of its own, not the dispatcher's pool: a pool full of stalled recordings must
 * not hold up the renewals that protect them. Rows locked right now are skipped (SKIP LOCKED):
 * a recording holds that lock, and a claim skips them for the same reason, so one stalled
 * recording never holds up the others' renewals. A renewal that fails is logged and tried at the
 * next tick; the lease it renews still has two thirds of its length to run.
 */
export class LeaseKeeper {
  private readonly held = new Map<string, { token: string; setAt: number }>(); // by delivery id
  private readonly failureListeners = new Set<() => void>();
  private timer: NodeJS.Timeout | null = null;
  private readonly db: pg.Pool;

  constructor(
    source: Pool,
    private readonly leaseMs: number,
    private readonly log: Logger,
  ) {
    const everyMs = leaseMs / 3;
    this.db = new pg.Pool({
      ...source.options,
      max: 1,
      application_name: 'connect-webhook-leases',
      // A renewal that does not answer within its tick is given up (the next one tries again).
      query_timeout: everyMs,
      connectionTimeoutMillis: everyMs,
      // Closed when nothing was held for a lease: a stopped dispatcher leaves no connection behind.
      idleTimeoutMillis: leaseMs,
      allowExitOnIdle: true,
    });
    this.db.on('error', () => undefined); // an idle connection that died; the next renewal opens another
  }

  /** Told about every renewal that failed (the dispatchers' metrics); returns the way to stop telling. */
  onRenewalFailed(listener: () => void): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /** From the claim until the outcome is recorded (or given up). */
  hold(id: string, token: string) {
    this.held.set(id, { token, setAt: performance.now() });
    this.timer ??= setInterval(() => void this.renew(), this.leaseMs / 3).unref();
  }

  release(id: string) {
    this.held.delete(id);
    if (this.held.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private renewing = false;

  private async renew() {
    if (this.renewing || this.held.size === 0) return; // one at a time: a slow one is not stacked
    const startedAt = performance.now();
    const due = dueForRenewal(this.held, startedAt, this.leaseMs);
    if (due.length === 0) return;
    this.renewing = true;
    try {
      const { rows } = await this.db.query<{ id: string }>(renewLeases, [
        due.map(([id]) => id),
        due.map(([, h]) => h.token),
        this.leaseMs,
      ]);
      for (const { id } of rows) {
        const h = this.held.get(id);
        if (h) h.setAt = startedAt; // the statement's now() is later: its lease runs at least this long
      }
    } catch (err) {
      this.log.warn({ err, deliveries: due.length }, 'webhook leases not renewed; tried again at the next tick');
      for (const listener of this.failureListeners) listener();
    } finally {
      this.renewing = false;
    }
  }
}

/** The leases held that were set half a lease ago or more (see LeaseKeeper): [id, lease state]. */
export function dueForRenewal<H extends { setAt: number }>(held: ReadonlyMap<string, H>, now: number, leaseMs: number) {
  return [...held].filter(([, h]) => now - h.setAt >= leaseMs / 2);
}

// One keeper, so one connection, per database and lease length in a process, whichever of the
// dispatcher's pools an attempt records through.
const keepers = new Map<string, LeaseKeeper>();

export function leaseKeeper(pool: Pool, leaseMs: number, log: Logger): LeaseKeeper {
  const key = `${leaseMs} ${pool.options.connectionString ?? ''}`;
  let keeper = keepers.get(key);
  if (!keeper) keepers.set(key, (keeper = new LeaseKeeper(pool, leaseMs, log)));
  return keeper;
}
