import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { containerMemoryLimit, resolveMemoryBudget } from '../../src/gateway/memory/container-limit.js';
import {
  bodyCostFactor,
  createMemoryBudget,
  fixedBytes,
  type MemoryBudget,
} from '../../src/gateway/memory/memory-budget.js';
import { ConfigError, loadConfig } from '../../src/shared/config.js';
import { AppError } from '../../src/shared/errors.js';
import { createLogger } from '../../src/shared/logger.js';

const MiB = 1024 * 1024;
const budgets: MemoryBudget[] = [];
afterEach(() => budgets.splice(0).forEach((b) => b.stop()));

function budget(budgetBytes: number, rss = () => 0) {
  const b = createMemoryBudget({
    budgetBytes,
    fixedBytes: fixedBytes(2, 96),
    clientSharePercent: 50,
    tenantSharePercent: 50,
    logger: createLogger('silent', 'unit'),
    rss,
  });
  budgets.push(b);
  return b;
}

const refusal = (admit: () => unknown) => {
  try {
    admit();
  } catch (err) {
    if (err instanceof AppError) return { code: err.code, retryAfter: err.retryAfterSeconds };
    throw err;
  }
  return null;
};

describe('memory budget', () => {
  it('leaves requests what the budget holds under its high water after the fixed part', () => {
    expect(fixedBytes(2, 96)).toBe((160 + 64 + 192) * MiB);
    expect(budget(768 * MiB).inFlightBytes).toBe(Math.floor(768 * MiB * 0.8) - fixedBytes(2, 96));
  });

  it('holds one client to its share (429) and all clients to the budget (503), freeing on release', () => {
    const b = budget(768 * MiB);
    const cost = 16 * MiB * bodyCostFactor;
    const abuser = { client: 'a', tenant: 't' };
    const held: (() => void)[] = [];
    let refused: ReturnType<typeof refusal> = null;
    while (!(refused = refusal(() => held.push(b.admitBody(abuser, 16 * MiB))))) expect(held.length).toBeLessThan(100);
    expect(refused).toEqual({ code: 'memory_share_exceeded', retryAfter: 1 });
    expect(held.length).toBe(Math.max(1, Math.floor(b.inFlightBytes / 2 / cost)));
    // Another tenant is served while the abuser holds its share.
    const victim = { client: 'v', tenant: 'u' };
    expect(refusal(() => b.admitBody(victim, 1024)())).toBeNull();
    // Tenant after tenant, until the budget is full: 503 for everyone, whatever their share.
    for (let tenant = 0; !refused || refused.code !== 'service_busy'; tenant++) {
      refused = refusal(() => held.push(b.admitBody({ client: `c${tenant}`, tenant: `t${tenant}` }, 16 * MiB)));
      expect(tenant).toBeLessThan(100);
    }
    expect(refused).toEqual({ code: 'service_busy', retryAfter: 1 });
    expect(b.state().reservedBytes).toBeLessThanOrEqual(b.inFlightBytes);
    expect(b.state().reservedBytes + cost).toBeGreaterThan(b.inFlightBytes);
    held.forEach((release) => release());
    expect(b.state().reservedBytes).toBe(0);
    expect(refusal(() => b.admitBody({ client: 'x', tenant: 'z' }, 16 * MiB)())).toBeNull();
  });

  it('lets one large request at a time, and small ones, through while resident memory is past its high water', async () => {
    let resident = 0;
    const b = budget(768 * MiB, () => resident);
    resident = 700 * MiB;
    await expect.poll(() => b.state().pressure).toBe(true);
    const one = b.admitBody({ client: 'a' }, 4 * MiB);
    expect(refusal(() => b.admitBody({ client: 'b' }, 4 * MiB))?.code).toBe('service_busy');
    expect(refusal(() => b.admitWork({ client: 'b' }, MiB))?.code).toBe('service_busy');
    expect(refusal(() => b.admitBody({ client: 'b' }, 1024)())).toBeNull();
    one();
    resident = 500 * MiB;
    await expect.poll(() => b.state().pressure).toBe(false);
    const two = [b.admitBody({ client: 'a' }, 4 * MiB), b.admitBody({ client: 'b' }, 4 * MiB)];
    two.forEach((release) => release());
    expect(b.state().reservedBytes).toBe(0);
  });
});

describe('container memory limit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cgroup-'));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };

  it('reads cgroup v2 memory.max, then v1 memory.limit_in_bytes; none or unlimited is null', () => {
    expect(containerMemoryLimit([file('v2', '805306368\n')])).toBe(768 * MiB);
    expect(containerMemoryLimit([join(dir, 'absent'), file('v1', '536870912\n')])).toBe(512 * MiB);
    expect(containerMemoryLimit([file('v2max', 'max\n')])).toBeNull();
    expect(containerMemoryLimit([file('v1max', '9223372036854771712\n')])).toBeNull();
    expect(containerMemoryLimit([join(dir, 'absent')])).toBeNull();
  });

  it('reads GATEWAY_MEMORY_BUDGET_BYTES: auto by default, off, or at least 256 MiB', () => {
    expect(loadConfig({}).limits.memoryBudget).toBe('auto');
    expect(loadConfig({ GATEWAY_MEMORY_BUDGET_BYTES: 'off' }).limits.memoryBudget).toBe('off');
    expect(loadConfig({ GATEWAY_MEMORY_BUDGET_BYTES: '805306368' }).limits.memoryBudget).toBe(768 * MiB);
    expect(() => loadConfig({ GATEWAY_MEMORY_BUDGET_BYTES: '1000' })).toThrow(ConfigError);
    expect(() => loadConfig({ GATEWAY_MEMORY_BUDGET_BYTES: 'lots' })).toThrow(ConfigError);
  });

  it('resolves the setting: bytes as given, auto from the container, off', () => {
    expect(resolveMemoryBudget(300 * MiB, () => 1)).toBe(300 * MiB);
    expect(resolveMemoryBudget('auto', () => 768 * MiB)).toBe(768 * MiB);
    expect(resolveMemoryBudget('auto', () => null)).toBeNull();
    expect(resolveMemoryBudget('off', () => 768 * MiB)).toBeNull();
  });
});
