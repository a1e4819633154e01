import { describe, expect, it } from 'vitest';
import { createUploadQuota, largestBody, uploadWindow } from '../../src/gateway/rate-limit/upload-quota.js';
import { AppError } from '../../src/shared/errors.js';

const MiB = 1024 * 1024;

async function refusal(p: Promise<void>): Promise<AppError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('uploadWindow', () => {
  it('is the shortest whole-second window that holds the largest body', () => {
    const routes = [{ bodyLimitBytes: 16 * MiB }, { bodyLimitBytes: 8192 }, {}];
    expect(largestBody(routes, MiB)).toBe(16 * MiB);
    expect(largestBody([{}], 3 * MiB)).toBe(3 * MiB); // the default limit counts for routes without their own
    expect(uploadWindow(4 * MiB, 16 * MiB)).toEqual({
      bytesPerSecond: 4 * MiB,
      windowSeconds: 4,
      windowBytes: 16 * MiB,
    });
    expect(uploadWindow(5 * MiB, 16 * MiB)).toEqual({
      bytesPerSecond: 5 * MiB,
      windowSeconds: 4,
      windowBytes: 20 * MiB,
    });
    expect(uploadWindow(64 * MiB, 16 * MiB).windowSeconds).toBe(1);
  });
});

describe('createUploadQuota', () => {
  // Client windows of 3 s and 3000 bytes; tenant windows of 2 s and 4000 bytes.
  const settings = { clientBytesPerSecond: 1000, tenantBytesPerSecond: 2000, largestBodyBytes: 3000 };
  const quota = () => {
    const of = createUploadQuota(settings, null);
    return (client: string, bytesPerSecond?: number | null) => of({ client, bytesPerSecond });
  };

  it('takes bodies until the window is spent, then refuses with the documented error', async () => {
    const forClient = quota();
    const a = forClient('a');
    await a.charge(2000);
    await a.charge(1000);
    const err = await refusal(a.charge(1));
    expect(err.code).toBe('upload_quota_exceeded');
    expect(err.kind).toBe('rate_limited');
    expect(err.details).toMatchObject({ quota: 'client', bytesPerSecond: 1000, windowBytes: 3000, windowSeconds: 3 });
    expect(err.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(err.retryAfterSeconds).toBeLessThanOrEqual(3);
    // Every client has its own.
    await forClient('b').charge(3000);
  });

  it('does not count a refused body', async () => {
    const a = quota()('a');
    await a.charge(2500);
    await refusal(a.charge(1000));
    await a.charge(500); // what was left before the refusal is still there
    await refusal(a.charge(1));
  });

  it('takes a body of unknown length chunk by chunk, refusing the chunk that does not fit', async () => {
    const a = quota()('a');
    await a.charge(1024);
    await a.charge(1024);
    expect((await refusal(a.charge(1024))).code).toBe('upload_quota_exceeded');
    await a.charge(952); // what is left still takes a smaller chunk
  });

  it('holds a client with a quota of its own to that one', async () => {
    const forClient = quota();
    const big = forClient('big', 2000); // 2 s windows of 4000 bytes: more than the default's 3000
    await big.charge(4000);
    const err = await refusal(big.charge(1));
    expect(err.details).toMatchObject({ bytesPerSecond: 2000, windowBytes: 4000, windowSeconds: 2 });
    // The default still applies to the others, and to the same client without its own.
    await forClient('other').charge(3000);
    expect((await refusal(forClient('other', null).charge(1))).details).toMatchObject({ windowSeconds: 3 });
  });

  it("holds a client an operator gave a quota above its tenant's to its own alone", async () => {
    const of = createUploadQuota(settings, null);
    const raised = of({ client: 'erp', tenant: 't', bytesPerSecond: 10_000 });
    await raised.charge(9000); // past the tenant's 4000 of a 2 s window
    // Held to its own quota alone, it spends none of the tenant's: the others keep theirs.
    const [a, b] = ['a', 'b'].map((client) => of({ client, tenant: 't' }));
    await a!.charge(3000);
    await b!.charge(1000);
    expect((await refusal(b!.charge(1))).details).toMatchObject({ quota: 'tenant' });
  });

  it('holds the clients of one tenant to the tenant quota together, counting a refused body in neither', async () => {
    const of = createUploadQuota(settings, null);
    const [a, b, c] = ['a', 'b', 'c'].map((client) => of({ client, tenant: 't' }));
    await a!.charge(2500);
    await b!.charge(1000);
    const err = await refusal(c!.charge(1000)); // c's own window has room; the tenant's has 500
    expect(err.details).toMatchObject({ quota: 'tenant', bytesPerSecond: 2000, windowBytes: 4000, windowSeconds: 2 });
    await c!.charge(500);
    await refusal(b!.charge(1));
    // Another tenant's client is not held by it, nor is c's own quota spent by the refusal.
    await of({ client: 'd', tenant: 'u' }).charge(3000);
    await of({ client: 'c' }).charge(2500);
  });
});
