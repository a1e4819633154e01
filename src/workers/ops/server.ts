// A worker process's own HTTP endpoints for operators: /metrics, /livez, /readyz. Plain node:http
// (a worker serves nothing else), no authentication: bind it to an internal address.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../../shared/logger.js';
import { serviceVersion } from '../../shared/version.js';
import type { Readiness } from './readiness.js';

export type OpsServer = { url: string; close(): Promise<void> };

export type OpsServerOptions = {
  host: string;
  /** 0: any free port (see url). */
  port: number;
  registry: Registry;
  readiness: () => Promise<Readiness>;
  logger: Logger;
};

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
};

/** The URL to print: a wildcard address is reached through loopback. */
export function urlOf(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/** Listens (rejects when it cannot, e.g. EADDRINUSE) and serves until close(). */
export async function startOpsServer({
  host,
  port,
  registry,
  readiness,
  logger,
}: OpsServerOptions): Promise<OpsServer> {
  const log = logger.child({ component: 'worker-http' });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return json(res, 405, { error: 'method_not_allowed' });
    }
    switch (path) {
      case '/livez':
        // Answering at all is the point: the event loop is not blocked.
        return json(res, 200, { status: 'ok', version: serviceVersion });
      case '/readyz': {
        const report = await readiness();
        return json(res, report.ready ? 200 : 503, report);
      }
      case '/metrics': {
        const text = await registry.metrics();
        res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
        res.end(text);
        return;
      }
      default:
        return json(res, 404, { error: 'not_found', paths: ['/metrics', '/livez', '/readyz'] });
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.warn({ err, url: req.url }, 'worker http request failed');
      if (res.headersSent) res.destroy();
      else json(res, 500, { error: 'internal_error' });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => log.warn({ err }, 'worker http server error'));
  const bound = (server.address() as AddressInfo).port;

  return {
    url: urlOf(host, bound),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // keep-alive scrapers would hold close() open
      }),
  };
}
