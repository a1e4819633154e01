import type { InboundMessage } from '../shared/kafka/bus.js';
import { tenantHeader } from '../shared/messages.js';

/**
 * What a worker process has fetched and not yet applied, and which message to apply next.
 *
 * Kafka keeps each partition in order; the worker only has to keep each *key* in order (an import
 * job's chunks, a work order's usages). So the queue takes every fetched message of every
 * partition it owns and hands out, one at a time, the message that is fair to apply next:
 * - tenants: among the tenants with a message ready, the one that has been served least (bytes
 *   applied: start-time fair queueing, equal weights) goes first; a tenant that was idle starts
 *   level with the others, so it cannot bank credit;
 * - keys: only the oldest unapplied message of a key is ready, and only when it is not waiting
 *   (a retry's backoff, its edge record): a message that waits holds its own key and nothing
 *   else — not its partition, not the fetch, not a connection; except one that found a dependency
 *   every apply needs away, which holds every key (retryAt's scope 'all').
 * Offsets: a partition's commit point is its oldest message not yet applied (everything before it
 * is done), so a crash re-delivers only unapplied or not-yet-committed messages, which the kinds
 * apply idempotently.
 */
export type Entry = {
  readonly message: InboundMessage;
  readonly tenant: string;
  readonly bytes: number;
  /** Not handed out before this time (ms since the epoch). */
  notBefore: number;
  /** Failed attempts that count towards dead-lettering. */
  failures: number;
  /** Attempts that found its edge record not committed yet. */
  edgeWaits: number;
  state: 'queued' | 'running' | 'done';
  /** The queue generation it was fetched in (reset() starts a new one). */
  readonly generation: number;
  readonly keyId: string;
  readonly partitionId: string;
};

type PartitionState = {
  topic: string;
  partition: number;
  /** Fetched messages in offset order; those before `head` are applied. */
  entries: Entry[];
  head: number;
  /** Bytes of fetched messages not yet applied. */
  bytes: number;
  /** The offset after the last fetched message. */
  end: bigint;
  /** The commit point last reported by takeCommits (null: none yet). */
  reported: string | null;
};

type TenantState = {
  /** Virtual time: bytes served. */
  served: number;
  /** Its keys with unapplied messages, in the order they arrived (a job at a time, first come first). */
  keys: Map<string, Entry[]>;
};

export class FairQueue {
  private readonly partitions = new Map<string, PartitionState>();
  private readonly tenants = new Map<string, TenantState>();
  /** Unapplied messages per key, oldest first (running ones of an earlier generation too). */
  private readonly keys = new Map<string, Entry[]>();
  private generation = 0;
  /** Nothing is handed out before this time (a dependency every apply needs is away). */
  private heldUntil = 0;

  /** One fetched batch of one partition, in offset order. */
  add(messages: InboundMessage[]): void {
    for (const message of messages) {
      const partitionId = `${message.topic}/${message.partition}`;
      let partition = this.partitions.get(partitionId);
      if (!partition) {
        partition = {
          topic: message.topic,
          partition: message.partition,
          entries: [],
          head: 0,
          bytes: 0,
          end: -1n,
          reported: null,
        };
        this.partitions.set(partitionId, partition);
      }
      const offset = BigInt(message.offset);
      // A batch fetched again (a fetch raced a pause): keep the first copy.
      if (offset < partition.end) continue;
      partition.end = offset + 1n;
      const tenant = message.headers[tenantHeader] ?? '';
      const keyId = message.key === null ? `${partitionId}@${message.offset}` : `${partitionId}#${message.key}`;
      const entry: Entry = {
        message,
        tenant,
        bytes: message.value?.length ?? 0,
        notBefore: 0,
        failures: 0,
        edgeWaits: 0,
        state: 'queued',
        generation: this.generation,
        keyId,
        partitionId,
      };
      partition.entries.push(entry);
      partition.bytes += entry.bytes;
      let ofKey = this.keys.get(keyId);
      if (!ofKey) this.keys.set(keyId, (ofKey = []));
      ofKey.push(entry);
      let t = this.tenants.get(tenant);
      if (!t) this.tenants.set(tenant, (t = { served: 0, keys: new Map() }));
      if (t.keys.size === 0) t.served = Math.max(t.served, this.leastServed(tenant)); // no banked credit
      t.keys.set(keyId, ofKey);
    }
  }

  /** The next message to apply now, marked running; undefined when none is ready. */
  next(now: number): Entry | undefined {
    if (now < this.heldUntil) return undefined;
    let best: { tenant: TenantState; entry: Entry } | undefined;
    for (const tenant of this.tenants.values()) {
      if (best && tenant.served >= best.tenant.served) continue;
      const entry = readyOf(tenant, now);
      if (entry) best = { tenant, entry };
    }
    if (!best) return undefined;
    best.entry.state = 'running';
    best.tenant.served += Math.max(best.entry.bytes, 1);
    return best.entry;
  }

  /**
   * A running message that was not applied: ready again from notBefore. Scope 'all': no message
   * is handed out before then (the attempt found a dependency every apply needs away).
   */
  retryAt(entry: Entry, notBefore: number, scope: 'key' | 'all' = 'key'): void {
    if (scope === 'all') this.heldUntil = Math.max(this.heldUntil, notBefore);
    entry.notBefore = notBefore;
    entry.state = 'queued';
    // A message of an earlier generation will be fetched again: drop this copy.
    if (entry.generation !== this.generation) this.forget(entry);
  }

  /** A running message is applied (or dead-lettered): its key's next message becomes ready. */
  done(entry: Entry): void {
    entry.state = 'done';
    this.forget(entry);
    if (entry.generation !== this.generation) return;
    const partition = this.partitions.get(entry.partitionId);
    if (!partition) return;
    partition.bytes -= entry.bytes;
    while (partition.head < partition.entries.length && partition.entries[partition.head]!.state === 'done') {
      partition.head++;
    }
    if (partition.head > 1024 && partition.head * 2 > partition.entries.length) {
      partition.entries = partition.entries.slice(partition.head);
      partition.head = 0;
    }
  }

  /**
   * The partitions were taken away or will be fetched again from their committed offsets (a
   * rebalance): drop every message not running. Running ones finish, but report no offsets.
   */
  reset(): void {
    this.generation++;
    this.partitions.clear();
    for (const [keyId, ofKey] of this.keys) {
      const running = ofKey.filter((e) => e.state === 'running');
      if (running.length > 0) this.keys.set(keyId, running);
      else this.keys.delete(keyId);
    }
    for (const tenant of this.tenants.values()) {
      for (const [keyId] of tenant.keys) {
        const ofKey = this.keys.get(keyId);
        if (ofKey) tenant.keys.set(keyId, ofKey);
        else tenant.keys.delete(keyId);
      }
    }
  }

  /** Commit points (the next offset to read) that moved since the last committed() call. */
  takeCommits(): { topic: string; partition: number; offset: string }[] {
    const commits = [];
    for (const p of this.partitions.values()) {
      if (p.end < 0n) continue;
      const offset = p.entries[p.head]?.message.offset ?? String(p.end);
      if (offset !== p.reported) commits.push({ topic: p.topic, partition: p.partition, offset });
    }
    return commits;
  }

  /** These commit points were committed. */
  committed(offsets: { topic: string; partition: number; offset: string }[]): void {
    for (const { topic, partition, offset } of offsets) {
      const p = this.partitions.get(`${topic}/${partition}`);
      if (p) p.reported = offset;
    }
  }

  /** Partitions with fetched messages in this generation. */
  get partitionCount(): number {
    return this.partitions.size;
  }

  /** Bytes fetched and not yet applied, of one partition. */
  bufferedBytes(topic: string, partition: number): number {
    return this.partitions.get(`${topic}/${partition}`)?.bytes ?? 0;
  }

  /** Messages not yet applied (running ones included). */
  get size(): number {
    let n = 0;
    for (const ofKey of this.keys.values()) n += ofKey.length;
    return n;
  }

  /**
   * When, after now, the next waiting message becomes ready (undefined: none waits). One ready
   * already needs no wake-up: it is handed out when an apply slot frees.
   */
  nextWakeup(now: number): number | undefined {
    if (now < this.heldUntil) return this.heldUntil;
    let at: number | undefined;
    for (const ofKey of this.keys.values()) {
      const head = ofKey[0];
      if (head?.state === 'queued' && head.notBefore > now && (at === undefined || head.notBefore < at))
        at = head.notBefore;
    }
    return at;
  }

  private forget(entry: Entry): void {
    const ofKey = this.keys.get(entry.keyId);
    if (!ofKey) return;
    const at = ofKey.indexOf(entry);
    if (at >= 0) ofKey.splice(at, 1);
    if (ofKey.length > 0) return;
    this.keys.delete(entry.keyId);
    this.tenants.get(entry.tenant)?.keys.delete(entry.keyId);
  }

  /** The least virtual time among the other tenants with work (0 when none has). */
  private leastServed(except: string): number {
    let least: number | undefined;
    for (const [name, t] of this.tenants) {
      if (name !== except && t.keys.size > 0 && (least === undefined || t.served < least)) least = t.served;
    }
    return least ?? 0;
  }
}

/** A tenant's first ready message: the head of one of its keys, queued and not waiting. */
function readyOf(tenant: TenantState, now: number): Entry | undefined {
  for (const ofKey of tenant.keys.values()) {
    const head = ofKey[0];
    if (head && head.state === 'queued' && head.notBefore <= now) return head;
  }
  return undefined;
}
