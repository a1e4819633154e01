/**
 * Whether a chunk tries COPY straight into `targets` before the staging table and upsert
 * (apply-chunk.ts). That COPY only succeeds when every target of the chunk is new; when one is
 * not, it fails and its work is wasted (up to a whole COPY batch of rows, measured at about an
 * eighth more time for a chunk of existing targets). Chunks of one source system tend to be
 * alike (a first import is new targets throughout, a daily sync existing ones), so after a miss
 * the next `skipAfterMiss` chunks of that (tenant, source system) go straight to the upsert, then
 * one tries again. Per worker process; forgets the oldest source once it holds `maxSources`.
 */
export class CopyFirstPolicy {
  private readonly skips = new Map<string, number>();

  constructor(
    private readonly skipAfterMiss = 16,
    private readonly maxSources = 10_000,
  ) {}

  /** Whether this chunk should try COPY first; counts a skip when not. */
  shouldTry(tenantId: string, sourceSystem: string): boolean {
    const key = sourceKey(tenantId, sourceSystem);
    const left = this.skips.get(key);
    if (left === undefined) return true;
    if (left <= 1) this.skips.delete(key);
    else this.skips.set(key, left - 1);
    return false;
  }

  /** The COPY failed because a target existed (or a concurrent chunk inserted it first). */
  missed(tenantId: string, sourceSystem: string): void {
    const key = sourceKey(tenantId, sourceSystem);
    this.skips.delete(key); // re-inserted last, so the oldest entry is the first one
    if (this.skips.size >= this.maxSources) this.skips.delete(this.skips.keys().next().value!);
    this.skips.set(key, this.skipAfterMiss);
  }
}

const sourceKey = (tenantId: string, sourceSystem: string) => `${tenantId}\u0000${sourceSystem}`;
