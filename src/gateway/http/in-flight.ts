/** Who holds a slot: an Integration Client (or an address when unauthenticated) and its tenant, if any. */
export type SlotHolder = { client: string; tenant?: string | null };

/** Which limit refused: the group's (everyone's), the client's share or its tenant's. */
export type SlotRefusal = 'group' | 'client' | 'tenant';

/**
 * How much of a group's `max` one client, or all of one tenant's clients, may hold: a percent of
 * it (at least one slot: the operation groups, the memory budget) or a fixed count (the event
 * feed's waiters).
 */
export type Share = { percent: number } | { count: number };

/**
 * In-flight slots per operation group, shared fairly: a group has `max` slots; one client
 * (Integration Client, or address when unauthenticated) holds at most its share of them, and all
 * of one tenant's clients together at most the tenant's share, so neither a client nor a tenant
 * with many clients can take them all. A taker may weigh more than one slot (the memory budget
 * counts bytes); a limit nothing holds yet admits any weight.
 */
export class InFlightSlots {
  private readonly held = new Map<string, number>();

  constructor(private readonly shares: { client: Share; tenant: Share }) {}

  /** A release function, or false when the group, this client's share or its tenant's is full. */
  take(group: string, holder: SlotHolder, max: number): (() => void) | false {
    const taken = this.takeWeighted(group, holder, max, 1);
    return typeof taken === 'function' ? taken : false;
  }

  /** A release function for `weight` slots, or the limit that has no room for them. */
  takeWeighted(group: string, { client, tenant }: SlotHolder, max: number, weight: number): (() => void) | SlotRefusal {
    const share = (s: Share) => ('count' in s ? s.count : Math.max(1, Math.floor((max * s.percent) / 100)));
    const counts: [string, number, SlotRefusal][] = [
      [group, max, 'group'],
      [`${group}\u0000client\u0000${client}`, share(this.shares.client), 'client'],
    ];
    // An operator who let one client hold more than its tenant's share meant it to (the tenant's
    // clients together are then held to that larger share).
    const tenantShare = Math.max(share(this.shares.tenant), share(this.shares.client));
    if (tenant) counts.push([`${group}\u0000tenant\u0000${tenant}`, tenantShare, 'tenant']);
    const full = counts.find(([key, limit]) => {
      const held = this.held.get(key) ?? 0;
      return held > 0 && held + weight > limit;
    });
    if (full) return full[2];
    for (const [key] of counts) this.held.set(key, (this.held.get(key) ?? 0) + weight);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const [key] of counts) {
        const left = this.held.get(key)! - weight;
        if (left === 0) this.held.delete(key);
        else this.held.set(key, left);
      }
    };
  }
}
