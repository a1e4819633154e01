import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { AppError } from '../../shared/errors.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';

export const pushDownloadPath = '/downloads/connect-push.mjs';
export const pushChecksumPath = `${pushDownloadPath}.sha256`;

/**
 * dist/connect-push.mjs of this checkout or image (scripts/build-push.mjs writes it): the same
 * three levels up from src/gateway/downloads (tsx) and dist/gateway/downloads (compiled).
 */
export const pushBundleUrl = new URL('../../../dist/connect-push.mjs', import.meta.url);

type Bundle = { text: string; sha256: string };

const notBuilt = () =>
  new AppError(
    'resource_not_found',
    'connect-push.mjs is not on this gateway: it was started without building it (npm run build).',
  );

const shared = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' };

/**
 * The uploader for integrators who do not have this repository: one file that needs only Node,
 * from the service they push to, with its SHA-256. Read once (a gateway serves the file it started
 * with); a gateway started without it answers 404 until restarted after a build.
 */
export function downloadRoutes(file: URL = pushBundleUrl): RouteDefinition[] {
  let bundle: Promise<Bundle> | undefined;
  const load = () =>
    (bundle ??= readFile(file).then(
      (bytes) => ({ text: bytes.toString('utf8'), sha256: createHash('sha256').update(bytes).digest('hex') }),
      (err: NodeJS.ErrnoException) => {
        bundle = undefined; // a later build is picked up by a later request
        throw err.code === 'ENOENT' ? notBuilt() : err;
      },
    ));
  return [
    defineRoute({
      method: 'get',
      path: pushDownloadPath,
      operationId: 'getConnectPush',
      summary: 'connect-push, the bulk uploader, as one file for Node 22+',
      description:
        "The bulk uploader (NDJSON or CSV of targets, batched within this gateway's limits, retried, rerun-safe) " +
        'as a single ES module that needs only Node 22 or later: no npm, no checkout. Its SHA-256 is in the ' +
        `X-Checksum-Sha256 header and at ${pushChecksumPath}; check it, then run \`node connect-push.mjs --help\`. ` +
        'No credentials. 404 when this gateway was started without building it.',
      tag: 'Operations',
      auth: 'none',
      responses: {
        200: {
          description: 'The uploader (JavaScript)',
          schema: z.string(),
          headers: { 'X-Checksum-Sha256': z.string().regex(/^[0-9a-f]{64}$/) },
        },
      },
      errorStatuses: [404],
      errorDescriptions: { 404: 'This gateway was started without the built uploader (npm run build).' },
      responseMediaTypes: ['text/javascript'],
      async handler() {
        const { text, sha256 } = await load();
        return {
          status: 200,
          body: text,
          headers: {
            ...shared,
            'Content-Type': 'text/javascript; charset=utf-8',
            'Content-Disposition': 'attachment; filename="connect-push.mjs"',
            'X-Checksum-Sha256': sha256,
          },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: pushChecksumPath,
      operationId: 'getConnectPushChecksum',
      summary: 'The SHA-256 of connect-push.mjs',
      description: `One line as sha256sum writes it: \`<hex>  connect-push.mjs\`, so \`sha256sum -c\` checks the download.`,
      tag: 'Operations',
      auth: 'none',
      responses: { 200: { description: 'sha256sum line', schema: z.string() } },
      errorStatuses: [404],
      errorDescriptions: { 404: 'This gateway was started without the built uploader (npm run build).' },
      responseMediaTypes: ['text/plain'],
      async handler() {
        const { sha256 } = await load();
        return {
          status: 200,
          body: `${sha256}  connect-push.mjs\n`,
          headers: { ...shared, 'Content-Type': 'text/plain; charset=utf-8' },
        };
      },
    }),
  ];
}
