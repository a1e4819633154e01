import { describe, expect, it } from 'vitest';
import { draftAnswer, draftDocument } from '../../../src/routing/draft-document.js';
import { suggestRoutes } from '../../../src/routing/suggest.js';
import { randomDraft } from './helpers.js';

describe('draftDocument', () => {
  const input = randomDraft(7, 40, { vehicles: 2, windowShare: 0.5 });
  const result = { targets: 40, ...suggestRoutes(input) };

  it('writes each stop with its coordinates as the answer has them, in the same member order', () => {
    const document = draftDocument(result);
    const stop = document.routes.flatMap((r) => r.stops)[0]!;
    const computed = result.routes.flatMap((r) => r.stops)[0]!;
    expect(Object.keys(document)).toEqual(['routes', 'unplaced', 'totalDistanceKm', 'totalDurationMinutes', 'summary']);
    expect(Object.keys(document.routes[0]!)).toEqual([
      'vehicle',
      'stops',
      'distanceKm',
      'durationMinutes',
      'start',
      'end',
    ]);
    expect(Object.keys(stop)).toEqual([
      'sequence',
      'externalId',
      'arrival',
      'departure',
      'waitMinutes',
      'legDistanceKm',
      'coordinates',
    ]);
    expect(stop.coordinates).toEqual({ latitude: computed.lat, longitude: computed.lon });
  });

  it('counts placed and unplaced targets in its summary', () => {
    const { summary } = draftDocument(result);
    const placed = result.routes.reduce((n, r) => n + r.stops.length, 0);
    expect(summary).toEqual({ targets: 40, placed, unplaced: result.unplaced.length });
    expect(summary.placed + summary.unplaced).toBe(40);
  });

  it('is answered as its JSON text with the scalars the gateway decides on', () => {
    const answer = draftAnswer({ routable: true, ...result });
    const document = draftDocument(result);
    expect(answer).toEqual({
      targets: 40,
      routable: true,
      placed: document.summary.placed,
      documentJson: JSON.stringify(document),
    });
    expect(draftAnswer({ targets: 3, routable: false })).toEqual({ targets: 3, routable: false });
  });
});
