import { describe, expect, it } from 'vitest';
import { RouteInputError } from '../../../src/routing/errors.js';
import { runRouteSuggestionInWorker } from '../../../src/routing/run-in-worker.js';
import { suggestRoutes } from '../../../src/routing/suggest.js';
import { randomDraft } from './helpers.js';

describe('runRouteSuggestionInWorker', () => {
  it('returns what the direct call returns', async () => {
    const input = randomDraft(3, 300, { vehicles: 4, windowShare: 0.3 });
    expect(await runRouteSuggestionInWorker(input)).toEqual(suggestRoutes(input));
  });

  it('keeps the event loop free while it computes', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      await runRouteSuggestionInWorker(randomDraft(4, 1000, { vehicles: 10, windowShare: 0.3 }));
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(3);
  });

  it('rejects bad input with RouteInputError', async () => {
    await expect(runRouteSuggestionInWorker({ ...randomDraft(1, 3), vehicles: 0 })).rejects.toThrow(RouteInputError);
  });

  it('stops on abort', async () => {
    const controller = new AbortController();
    const running = runRouteSuggestionInWorker(randomDraft(2, 1000, { vehicles: 10 }), { signal: controller.signal });
    controller.abort(new Error('client went away'));
    await expect(running).rejects.toThrow('client went away');
  });
});
