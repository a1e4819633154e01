import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { downloadRoutes } from '../../src/gateway/downloads/routes.js';
import { statusOfKind } from '../../src/gateway/http/error-mapping.js';
import type { HandlerInput } from '../../src/gateway/routes/route-definition.js';
import { AppError } from '../../src/shared/errors.js';

const input = {} as HandlerInput<unknown, unknown, unknown>;

describe('GET /downloads/connect-push.mjs', () => {
  it('without the built file: 404 resource_not_found (never 500), and serves it once it is there', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'downloads-'));
    try {
      const file = join(dir, 'connect-push.mjs');
      const [script, checksum] = downloadRoutes(pathToFileURL(file));
      for (const route of [script!, checksum!]) {
        const err = await route.handler(input).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(AppError);
        expect((err as AppError).code).toBe('resource_not_found');
        expect(statusOfKind[(err as AppError).kind]).toBe(404);
        expect((err as AppError).message).toMatch(/npm run build/);
      }
      await writeFile(file, 'console.log("hi")\n');
      const sha256 = createHash('sha256').update('console.log("hi")\n').digest('hex');
      const got = await script!.handler(input);
      expect(got).toMatchObject({ status: 200, body: 'console.log("hi")\n' });
      expect(got.headers?.['X-Checksum-Sha256']).toBe(sha256);
      expect(await checksum!.handler(input)).toMatchObject({ status: 200, body: `${sha256}  connect-push.mjs\n` });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
