import { Counter, Gauge, type Registry } from 'prom-client';
import type { TenantPool } from '../../shared/db/tenant-scope.js';
import type { CheckoutOutcome } from '../../shared/db/tenant-shares.js';

/**
 * The tenants' shares of the gateway's scoped pools (db/tenant-shares.ts), read at each scrape:
 * checkouts by outcome (a tenant refused past its share shows as queue_full / wait_expired),
 * connections held and checkouts waiting, and how many tenants hold their whole share.
 */
export function registerTenantShareMetrics(registry: Registry, pools: Record<string, TenantPool>): void {
  const counted = new Map<string, number>();
  new Counter({
    name: 'db_tenant_checkouts_total',
    help:
      "Checkouts of the gateway's tenant-scoped connections by pool and outcome: immediate, queued (waited behind " +
      "the tenant's share), queue_full and wait_expired (refused: 429 database_share_exceeded)",
    labelNames: ['pool', 'outcome'] as const,
    registers: [registry],
    collect() {
      for (const [pool, stats] of readStats(pools)) {
        for (const [outcome, total] of Object.entries(stats.outcomes) as [CheckoutOutcome, number][]) {
          const key = `${pool}\u0000${outcome}`;
          this.inc({ pool, outcome }, total - (counted.get(key) ?? 0));
          counted.set(key, total);
        }
      }
    },
  });
  new Gauge({
    name: 'db_tenant_connections',
    help: "The gateway's tenant-scoped connections by pool and state: held (checked out) or waiting (checkouts queued)",
    labelNames: ['pool', 'state'] as const,
    registers: [registry],
    collect() {
      for (const [pool, stats] of readStats(pools)) {
        this.set({ pool, state: 'held' }, stats.held);
        this.set({ pool, state: 'waiting' }, stats.waiting);
      }
    },
  });
  new Gauge({
    name: 'db_tenants_at_share',
    help: 'Tenants holding their whole share of a tenant-scoped pool now (DATABASE_TENANT_SHARE_PERCENT)',
    labelNames: ['pool'] as const,
    registers: [registry],
    collect() {
      for (const [pool, stats] of readStats(pools)) this.set({ pool }, stats.tenantsAtShare);
    },
  });
}

function* readStats(pools: Record<string, TenantPool>) {
  for (const [name, pool] of Object.entries(pools)) {
    const stats = pool.shares();
    if (stats) yield [name, stats] as const;
  }
}
