import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { sharedWebhookResolver, type WebhookResolver } from './dns-cache.js';

// Server-side request forgery guard: webhook targets are http(s) URLs whose host resolves only to
// public unicast addresses. Loopback, link-local, private (RFC 1918), unique-local (fc00::/7),
// unspecified, shared/CGNAT (100.64/10), multicast, broadcast, reserved and documentation ranges
// are refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true. IPv6 forms that embed an IPv4 address:
// - judged as the IPv4 they carry: IPv4-mapped ::ffff:a.b.c.d (the socket connects to that IPv4),
//   NAT64 64:ff9b::a.b.c.d (DNS64 networks synthesise it for public IPv4-only hosts) and ISATAP
//   interface ids …:0:5efe:a.b.c.d / …:200:5efe:a.b.c.d under a public prefix;
// - refused outright: IPv4-compatible ::a.b.c.d (deprecated, RFC 4291), local-use NAT64
//   64:ff9b:1::/48 (site-defined translation), 6to4 2002::/16, Teredo 2001::/32 and IPv4-translated
//   ::ffff:0:a.b.c.d (all special ranges, never public unicast).
// Checked when an endpoint is registered and again at every delivery, on the very addresses the
// connection uses (DNS rebinding); both go through refusedRange.

export class TargetRefusedError extends Error {
  readonly code = 'target_refused';
}

export const maxWebhookUrlLength = 2000;

// Text the URL parser would drop (tab, CR, LF, leading and trailing C0) or send percent-encoded
// (other controls, unpaired surrogates as U+FFFD): refused rather than silently changed. In u-mode
// a well-formed surrogate pair is one code point, so \p{Surrogate} matches unpaired halves only.
const controlCharacter = /\p{Cc}/u;
const unpairedSurrogate = /\p{Surrogate}/u;

const codePoint = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * The one rule for a URL an operator or a client gives (admin CLI, API create and change): the
 * WHATWG href to store, which is what the dispatcher sends to; throws TargetRefusedError with
 * the reason. Leading and trailing spaces go, the scheme and host are lower-cased, the path is
 * percent-encoded; the href always fits the table's CHECK (^https?://, at most 2000 characters).
 */
export function normaliseWebhookUrl(value: string): string {
  const control = controlCharacter.exec(value);
  if (control) throw new TargetRefusedError(`the URL must not contain the control character ${codePoint(control[0])}`);
  if (unpairedSurrogate.test(value)) throw new TargetRefusedError('the URL contains an unpaired UTF-16 surrogate');
  const { href } = parseWebhookUrl(value);
  if (href.includes('#')) throw new TargetRefusedError('the URL must not have a #fragment'); // an empty one too
  if (href.length > maxWebhookUrlLength)
    throw new TargetRefusedError(
      `the URL is longer than ${maxWebhookUrlLength} characters once normalised (${href.length}: percent-encoding lengthens it)`,
    );
  return href;
}

/**
 * Parses and checks the form of an endpoint URL (also a stored one, at each delivery); throws
 * TargetRefusedError with the reason. A URL given to be stored goes through normaliseWebhookUrl.
 */
export function parseWebhookUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TargetRefusedError(`not a valid absolute URL: ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TargetRefusedError(`only http and https URLs are allowed, got ${url.protocol.replace(/:$/, '')}`);
  }
  if (url.username || url.password) {
    throw new TargetRefusedError('credentials in the URL are not allowed; receivers verify the signature instead');
  }
  if (url.hash) throw new TargetRefusedError('the URL must not have a #fragment');
  if (value.length > maxWebhookUrlLength) throw new TargetRefusedError(`the URL is longer than ${maxWebhookUrlLength}`);
  return url;
}

/** The URL's host without IPv6 brackets. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/** Null when the address may be called, else the name of its range (e.g. "loopback", "private"). */
export function refusedRange(address: string): string | null {
  if (!ipaddr.isValid(address)) return 'invalid';
  const ip = ipaddr.parse(hexTail(address));
  if (ip.kind() === 'ipv4') return publicOrRange(ip.range());
  const v6 = ip as ipaddr.IPv6;
  const parts = v6.parts;
  if (v6.isIPv4MappedAddress()) return publicOrRange(v6.toIPv4Address().range());
  if (parts.slice(0, 6).every((p) => p === 0) && (parts[6] !== 0 || parts[7]! > 1)) return 'ipv4Compatible'; // not :: or ::1
  const range = v6.range();
  if (range === 'rfc6052' && parts.slice(2, 6).every((p) => p === 0)) return publicOrRange(embeddedIpv4(v6).range());
  if (range === 'unicast' && (parts[4]! & 0xfcff) === 0 && parts[5] === 0x5efe)
    return publicOrRange(embeddedIpv4(v6).range()); // ISATAP
  return publicOrRange(range);
}

const publicOrRange = (range: string) => (range === 'unicast' ? null : range);

const embeddedIpv4 = (ip: ipaddr.IPv6) => ipaddr.fromByteArray(ip.toByteArray().slice(12));

/** "::1.2.3.4" → "::102:304": ipaddr.js reads the deprecated "::a.b.c.d" form as IPv4-mapped. */
function hexTail(address: string): string {
  const m = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)(%.*)?$/.exec(address);
  if (!m) return address;
  const [a, b, c, d] = m.slice(2, 6).map(Number) as [number, number, number, number];
  return `${m[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}${m[6] ?? ''}`;
}

function assertAllowed(host: string, addresses: readonly string[]): void {
  for (const address of addresses) {
    const range = refusedRange(address);
    if (range) {
      const via = address === host ? '' : ` (${host} resolves to ${address})`;
      throw new TargetRefusedError(
        `target address ${address}${via} is in a ${range} range; set WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow it`,
      );
    }
  }
}

/**
 * Resolves the host (all addresses, by the resolver deliveries use: dns-cache.ts, so a tenant's
 * slow names do not hold the gateway's thread pool either) and refuses it if any address is not allowed.
 */
export async function checkWebhookTarget(
  url: URL,
  allowPrivate: boolean,
  resolver: WebhookResolver = sharedWebhookResolver(),
): Promise<string[]> {
  const host = hostOf(url);
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await resolver.lookupAll(host)).map((a) => a.address);
    } catch (err) {
      throw new TargetRefusedError(`cannot resolve ${host}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  if (!allowPrivate) assertAllowed(host, addresses);
  return addresses;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http(s).request that resolves (by `resolver`: c-ares, cached for the TTL, not the
 * thread pool; dns-cache.ts), checks every address and hands exactly the checked addresses to the
 * socket, so a DNS answer cannot change between check and connect.
 */
export function guardedLookup(allowPrivate: boolean, resolver: WebhookResolver = sharedWebhookResolver()) {
  return (hostname: string, options: { all?: boolean; family?: number } | number, callback: LookupCallback) => {
    const all = typeof options === 'object' && options.all === true;
    resolver.lookupAll(hostname).then(
      (addresses) => {
        try {
          if (!allowPrivate)
            assertAllowed(
              hostname,
              addresses.map((a) => a.address),
            );
        } catch (err) {
          callback(err as NodeJS.ErrnoException, all ? [] : '', undefined);
          return;
        }
        if (all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, all ? [] : '', undefined),
    );
  };
}

/** For IP-literal hosts (which never go through lookup): the same check, synchronously. */
export function assertLiteralTargetAllowed(url: URL, allowPrivate: boolean): void {
  const host = hostOf(url);
  if (!allowPrivate && isIP(host)) assertAllowed(host, [host]);
}
