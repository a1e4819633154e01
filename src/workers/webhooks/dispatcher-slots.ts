/**
 * One dispatcher process's slots: `max` attempts at once, of which one tenant's deliveries hold
 * at most tenantSharePercent (at least one slot), so the rest stay free for the other tenants
 * (the same share rule as the gateway's in-flight slots, gateway/http/in-flight.ts). The claim
 * (sql.ts) is told what each tenant holds here and takes no more than its share.
 */
export class DispatcherSlots {
  readonly tenantShare: number;
  private readonly running = new Map<string, { tenant: string; work: Promise<void> }>();
  private readonly byTenant = new Map<string, number>();

  constructor(
    private readonly max: number,
    tenantSharePercent: number,
  ) {
    this.tenantShare = Math.max(1, Math.floor((max * tenantSharePercent) / 100));
  }

  free(): number {
    return this.max - this.running.size;
  }

  /** Slots each tenant holds now (tenants holding none are absent). */
  heldByTenant(): ReadonlyMap<string, number> {
    return this.byTenant;
  }

  /** Ids of the deliveries in hand (an attempt, or its outcome waiting for PostgreSQL). */
  deliveryIds(): string[] {
    return [...this.running.keys()];
  }

  /** Runs work in a slot of the delivery's tenant; the slot is free again when it settles (the promise returned). */
  take(delivery: { id: string; tenant_id: string }, work: () => Promise<void>): Promise<void> {
    const tenant = delivery.tenant_id;
    this.byTenant.set(tenant, (this.byTenant.get(tenant) ?? 0) + 1);
    const done = work().finally(() => {
      this.running.delete(delivery.id);
      const left = this.byTenant.get(tenant)! - 1;
      if (left === 0) this.byTenant.delete(tenant);
      else this.byTenant.set(tenant, left);
    });
    this.running.set(delivery.id, { tenant, work: done });
    return done;
  }

  /** Resolves when every attempt in hand has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.running.values()].map((r) => r.work));
  }
}
