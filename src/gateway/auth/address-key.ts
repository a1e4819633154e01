import ipaddr from 'ipaddr.js';

/**
 * The key a client address counts under in the address throttles: IPv4 (IPv4-mapped IPv6
 * included) as is, IPv6 by its /64, the smallest block one host is usually given (so one host
 * cannot dodge a limit by rotating addresses in it).
 */
export function addressKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const ip = ipaddr.process(address);
  if (ip.kind() === 'ipv4') return ip.toString();
  return `${(ip as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((p) => p.toString(16))
    .join(':')}::/64`;
}
