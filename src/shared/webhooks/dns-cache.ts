import { lookup as systemLookup } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import CacheableLookup from 'cacheable-lookup';

// DNS for webhook attempts (issue 50). dns.lookup (getaddrinfo) runs on libuv's thread pool, four
// threads shared by the whole process: a tenant whose hosts resolve slowly held them and delayed
// every other tenant's attempts. Names are resolved instead by c-ares (dns.promises.Resolver,
// resolve4 and resolve6 on the event loop, no thread taken while waiting) and the answers kept
// for their TTL (cacheable-lookup: at most maxTtlSeconds; an empty answer 0.15 s; a failure not
// at all; concurrent lookups of one name share one query). A slow name delays only the attempts
// to it, and the per-attempt timeout still bounds them (post.ts).
//
// Names DNS does not know (an empty answer): /etc/hosts and the like, through the system's lookup
// as before (cacheable-lookup's fallback, for an hour per name; those answer from a file, fast).
// localhost and *.localhost (RFC 6761) are never asked of DNS. A name both in /etc/hosts and in
// DNS now resolves as DNS says.

export type ResolvedAddress = { address: string; family: number };

export type WebhookResolver = {
  /** Every address of the name (IPv4 first), from the cache while its TTL lasts. */
  lookupAll(hostname: string): Promise<ResolvedAddress[]>;
};

export type ResolverOptions = {
  /** DNS servers ("ip" or "ip:port"); default the system's (/etc/resolv.conf). */
  servers?: string[];
  /** c-ares: the first try's timeout and the tries per server. */
  timeoutMs?: number;
  tries?: number;
  /** No answer is kept longer than this, whatever its TTL. */
  maxTtlSeconds?: number;
};

const isLocalhost = (hostname: string) => /^(.+\.)?localhost\.?$/i.test(hostname);

const systemLookupAll = (hostname: string) =>
  new Promise<ResolvedAddress[]>((resolve, reject) =>
    systemLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  );

export function createWebhookResolver(options: ResolverOptions = {}): WebhookResolver {
  const resolver = new Resolver({ timeout: options.timeoutMs ?? 2500, tries: options.tries ?? 2 });
  if (options.servers) resolver.setServers(options.servers);
  const cache = new CacheableLookup({ resolver, maxTtl: options.maxTtlSeconds ?? 300 });
  return {
    async lookupAll(hostname) {
      if (isLocalhost(hostname)) return systemLookupAll(hostname);
      const entries = await cache.lookupAsync(hostname, { all: true });
      return entries.map(({ address, family }) => ({ address, family }));
    },
  };
}

let shared: WebhookResolver | null = null;

/** The process's resolver (one cache for all its dispatchers' attempts). */
export const sharedWebhookResolver = (): WebhookResolver => (shared ??= createWebhookResolver());
