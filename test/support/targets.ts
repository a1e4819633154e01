import { mulberry32 } from './prng.js';

/** Realistic targets around Berlin for tests and benchmarks; deterministic for a given seed. */
export function makeTargets(count: number, prefix = 't', seed = 1) {
  const rnd = mulberry32(seed);
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
