/**
 * In-flight slots per operation group, shared fairly: a group has `max` slots, and one client
 * (Integration Client, or address when unauthenticated) holds at most sharePercent of them (at
 * least one), so a single client can never take them all.
 */
export class InFlightSlots {
  private readonly total = new Map<string, number>();
  private readonly perClient = new Map<string, number>();

  constructor(private readonly sharePercent: number) {}

  /** A release function, or false when the group or this client's share is full. */
  take(group: string, client: string, max: number): (() => void) | false {
    const clientKey = `${group}\u0000${client}`;
    const clientMax = Math.max(1, Math.floor((max * this.sharePercent) / 100));
    const total = this.total.get(group) ?? 0;
    const mine = this.perClient.get(clientKey) ?? 0;
    if (total >= max || mine >= clientMax) return false;
    this.total.set(group, total + 1);
    this.perClient.set(clientKey, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total.set(group, this.total.get(group)! - 1);
      const left = this.perClient.get(clientKey)! - 1;
      if (left === 0) this.perClient.delete(clientKey);
      else this.perClient.set(clientKey, left);
    };
  }
}
