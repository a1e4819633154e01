/** Realistic targets around Berlin for tests and benchmarks; deterministic for a given seed. */
export function makeTargets(count: number, prefix = 't', seed = 1) {
  let s = seed >>> 0;
  const rnd = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: count }, (_, i) => ({
    externalId: `${prefix}-${i}`,
    name: `Customer site ${prefix}-${i}`,
    address: { line1: `Hauptstraße ${(i % 200) + 1}`, postalCode: '10115', city: 'Berlin', countryCode: 'DE' },
    coordinates: { latitude: 52.4 + rnd() * 0.25, longitude: 13.2 + rnd() * 0.4 },
    timeWindows: i % 3 === 0 ? [{ start: '2026-11-23T08:00:00+01:00', end: '2026-11-23T12:00:00+01:00' }] : [],
    serviceDurationMinutes: 10 + (i % 4) * 5,
    priority: 1 + (i % 5),
    tags: i % 2 ? ['maintenance'] : ['inspection', 'priority'],
    metadata: { contract: `C-${1000 + (i % 97)}`, floor: i % 7 },
  }));
}
