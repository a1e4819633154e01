/**
 * One dispatcher process's slots: a slot is one open request, `max` of them at most (a hard cap:
 * the claim asks for no more than are free). Three rules decide who gets a free slot (issue 50):
 *
 * - Reserved for endpoints that answer: `reserve` slots are only ever taken by deliveries to
 *   endpoints whose last attempt succeeded and none of whose requests here is slow (open for
 *   slowMs or more, or its last one took that long). Deliveries to any other endpoint (failing,
 *   timing out, never tried) are claimed only while more than `reserve` slots are free, so however
 *   many tenants' endpoints hang, an endpoint that answers finds a slot at once.
 * - Fair by time, not by count: each tenant's use is the slot-milliseconds its attempts held here
 *   (decaying by half every halfLifeMs, and counting requests still open as they go); among
 *   deliveries due, the claim serves the tenant that used least first (start-time fair queueing:
 *   a tenant's n-th delivery of the claim is ordered at its use plus n − 1 times its typical
 *   attempt's length). A tenant whose endpoints hold slots for seconds each sorts behind one whose
 *   attempts take milliseconds, however old its backlog.
 * - A ceiling per tenant: at most tenantShare slots (tenantSharePercent of max, at least one) at once.
 */
export type SlotSettings = {
  max: number;
  tenantSharePercent: number;
  reservePercent: number;
  slowMs: number;
  halfLifeMs?: number;
};

/** What the claim is told about the tenants this process has served (sql.ts claimDeliveries). */
export type TenantUse = { ids: string[]; held: number[]; usedMs: number[]; costMs: number[] };

type Tenant = { held: number; usedMs: number; at: number; costMs: number | null };
type Running = { tenant: string; endpoint: string; startedAt: number; answering: boolean; failed: boolean };
/**
 * What a slot needs to know of a delivery; `answering`: claimed as a delivery to an endpoint that
 * answers (or chained after its success), so PostgreSQL counts its endpoint as answering.
 */
export type SlotDelivery = { id: string; tenant_id: string; endpoint_id: string; answering?: boolean };

/** A tenant never served here is ordered as if its attempts took this long (one slot-second). */
export const unknownCostMs = 1000;
/** Slow endpoints remembered at most (the oldest forgotten first): bounded memory. */
const slowRemembered = 10_000;

export class DispatcherSlots {
  readonly tenantShare: number;
  readonly reserve: number;
  private readonly slowMs: number;
  private readonly halfLifeMs: number;
  private readonly running = new Map<string, Running>(); // delivery id → its attempt
  private readonly openByEndpoint = new Map<string, Set<Running>>(); // the same, by endpoint: isSlow per success
  private readonly slots = new Set<Promise<void>>(); // each slot held: settles when its last attempt has
  private readonly tenants = new Map<string, Tenant>();
  /** Endpoints whose last attempt here succeeded, but took slowMs or more (until one answers faster or fails). */
  private readonly slowEndpoints = new Set<string>();
  private peak = 0;

  constructor(
    private readonly settings: SlotSettings,
    private readonly clock: () => number = () => performance.now(),
  ) {
    const { max, tenantSharePercent, reservePercent } = settings;
    this.tenantShare = Math.max(1, Math.floor((max * tenantSharePercent) / 100));
    this.reserve = Math.min(max - 1, Math.floor((max * reservePercent) / 100));
    this.slowMs = settings.slowMs;
    this.halfLifeMs = settings.halfLifeMs ?? 30_000;
  }

  free(): number {
    return this.settings.max - this.running.size;
  }

  /** Slots that deliveries to endpoints not known to answer may take now (the free beyond the reserve). */
  unreservedFree(): number {
    return Math.max(0, this.free() - this.reserve);
  }

  /** The most slots held at once since start. */
  peakHeld(): number {
    return this.peak;
  }

  /** Slots each tenant holds now (tenants holding none are absent). */
  heldByTenant(): ReadonlyMap<string, number> {
    return new Map([...this.tenants].filter(([, t]) => t.held > 0).map(([id, t]) => [id, t.held]));
  }

  /** Slots this tenant holds now. */
  tenantHeld(tenantId: string): number {
    return this.tenants.get(tenantId)?.held ?? 0;
  }

  /** Every tenant served here recently: slots held, slot-ms used (decayed, open requests included), typical attempt ms. */
  tenantUse(): TenantUse {
    const now = this.clock();
    const openMs = new Map<string, number>();
    for (const r of this.running.values()) openMs.set(r.tenant, (openMs.get(r.tenant) ?? 0) + (now - r.startedAt));
    const use: TenantUse = { ids: [], held: [], usedMs: [], costMs: [] };
    for (const [id, t] of this.tenants) {
      const usedMs = this.decayed(t, now) + (openMs.get(id) ?? 0);
      if (t.held === 0 && usedMs < 1) {
        this.tenants.delete(id); // forgotten: it starts level with a tenant never seen
        continue;
      }
      use.ids.push(id);
      use.held.push(t.held);
      use.usedMs.push(usedMs);
      use.costMs.push(Math.max(1, t.costMs ?? unknownCostMs, openMs.has(id) ? openMs.get(id)! / t.held : 0));
    }
    return use;
  }

  /**
   * Endpoints not to be treated as answering though PostgreSQL counts them so: a request here
   * to an endpoint that answered (claimed as answering) open slowMs or more, or the last attempt
   * here a success that took that long. Others are left out (PostgreSQL already counts an endpoint
   * whose last attempt failed or that never answered as not answering): in an outage, hundreds of
   * hanging requests are open, and the claim compares every endpoint with this list (issue 50).
   * `openOnly`: the open requests alone (a process of the answering lane: no other lane counts
   * this process's slow successes, so an endpoint it left out for one would be nobody's).
   */
  slowEndpointIds({ openOnly = false } = {}): string[] {
    const now = this.clock();
    const slow = new Set(openOnly ? [] : this.slowEndpoints);
    for (const r of this.running.values()) if (r.answering && now - r.startedAt >= this.slowMs) slow.add(r.endpoint);
    return [...slow];
  }

  /** Whether this endpoint has a request here open slowMs or more, or its last attempt here was a slow success. */
  isSlow(endpointId: string): boolean {
    if (this.slowEndpoints.has(endpointId)) return true;
    const now = this.clock();
    for (const r of this.openByEndpoint.get(endpointId) ?? []) if (now - r.startedAt >= this.slowMs) return true;
    return false;
  }

  /**
   * The attempt of a delivery in hand failed: however long it took, it does not make its endpoint
   * slow here (its recorded failure makes it not answering).
   */
  markFailed(deliveryId: string) {
    const r = this.running.get(deliveryId);
    if (r) r.failed = true;
  }

  /** Ids of the deliveries in hand (an attempt, or its outcome waiting for PostgreSQL) for heldMs or more. */
  deliveryIds(heldMs = 0): string[] {
    if (heldMs <= 0) return [...this.running.keys()];
    const since = this.clock() - heldMs;
    return [...this.running].filter(([, r]) => r.startedAt <= since).map(([id]) => id);
  }

  /**
   * Runs work in a slot of the delivery's tenant; the slot is free again when it settles (the
   * promise returned). When the work hands back another delivery of the same tenant (its
   * endpoint's next, begun by the recording of a success: sql.ts recordSuccesses), that one is
   * worked on in the same slot at once: the slot never comes free in between (nothing else can
   * take it, the count held stays), and each attempt is charged to the tenant's slot time and
   * the endpoint's speed as if it had had a slot of its own.
   */
  take<D extends SlotDelivery>(delivery: D, work: (d: D) => Promise<D | null | void>): Promise<void> {
    const tenantId = delivery.tenant_id;
    const tenant = this.tenants.get(tenantId) ?? { held: 0, usedMs: 0, at: this.clock(), costMs: null };
    tenant.held++;
    this.tenants.set(tenantId, tenant);
    const settle = (d: D, startedAt: number) => {
      const now = this.clock();
      const tookMs = now - startedAt;
      const r = this.running.get(d.id);
      this.running.delete(d.id);
      const open = this.openByEndpoint.get(d.endpoint_id);
      if (r && open?.delete(r) && open.size === 0) this.openByEndpoint.delete(d.endpoint_id);
      const failed = r?.failed ?? false;
      tenant.usedMs = this.decayed(tenant, now) + tookMs;
      tenant.at = now;
      tenant.costMs = tenant.costMs === null ? tookMs : 0.8 * tenant.costMs + 0.2 * tookMs;
      if (!this.tenants.has(tenantId)) this.tenants.set(tenantId, tenant);
      this.noteSpeed(d.endpoint_id, failed ? 0 : tookMs);
    };
    // The next attempt starts in the same turn as the last one settles: no moment in which the
    // slot looks free (a claim could take it).
    const run = (d: D): Promise<void> => {
      const startedAt = this.clock();
      const r: Running = {
        tenant: tenantId,
        endpoint: d.endpoint_id,
        startedAt,
        answering: d.answering ?? false,
        failed: false,
      };
      this.running.set(d.id, r);
      const open = this.openByEndpoint.get(d.endpoint_id) ?? new Set<Running>();
      this.openByEndpoint.set(d.endpoint_id, open.add(r));
      this.peak = Math.max(this.peak, this.running.size);
      const done = (async () => (await work(d)) ?? null)();
      return done.then(
        (next) => {
          settle(d, startedAt);
          // only ever the same tenant's (the statement chains the same endpoint's deliveries)
          if (next && next.tenant_id === tenantId) return run(next);
        },
        (err: unknown) => {
          settle(d, startedAt);
          throw err;
        },
      );
    };
    const slot = run(delivery).finally(() => {
      tenant.held--;
      this.slots.delete(slot);
    });
    this.slots.add(slot);
    return slot;
  }

  /** Resolves when every attempt in hand has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.slots]);
  }

  private decayed(t: Tenant, now: number): number {
    return t.usedMs * 2 ** (-(now - t.at) / this.halfLifeMs);
  }

  private noteSpeed(endpoint: string, tookMs: number) {
    this.slowEndpoints.delete(endpoint);
    if (tookMs < this.slowMs) return;
    this.slowEndpoints.add(endpoint); // re-added: now the newest
    if (this.slowEndpoints.size > slowRemembered) this.slowEndpoints.delete(this.slowEndpoints.values().next().value!);
  }
}
