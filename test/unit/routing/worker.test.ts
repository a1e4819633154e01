import { describe, expect, it } from 'vitest';
import { RouteInputError } from '../../../src/routing/errors.js';
import { suggestImportedDraft } from '../../../src/routing/imported-draft.js';
import { runRouteSuggestionInWorker } from '../../../src/routing/run-in-worker.js';
import { suggestRoutes } from '../../../src/routing/suggest.js';
import { asImported, randomDraft } from './helpers.js';

describe('runRouteSuggestionInWorker', () => {
  it('returns what the direct call returns: the routes of the same draft given in clock windows', async () => {
    const input = randomDraft(3, 300, { vehicles: 4, windowShare: 0.3 });
    const inWorker = await runRouteSuggestionInWorker(asImported(input));
    expect(inWorker).toEqual(suggestImportedDraft(asImported(input)));
    expect(inWorker).toMatchObject({ routable: true, targets: 300, routes: suggestRoutes(input).routes });
  });

  it('keeps the event loop free while it computes', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      await runRouteSuggestionInWorker(asImported(randomDraft(4, 1000, { vehicles: 10, windowShare: 0.3 })));
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(3);
  });

  it('rejects bad input with RouteInputError', async () => {
    await expect(runRouteSuggestionInWorker(asImported({ ...randomDraft(1, 3), vehicles: 0 }))).rejects.toThrow(
      RouteInputError,
    );
  });

  it('stops on abort', async () => {
    const controller = new AbortController();
    const running = runRouteSuggestionInWorker(asImported(randomDraft(2, 1000, { vehicles: 10 })), {
      signal: controller.signal,
    });
    controller.abort(new Error('client went away'));
    await expect(running).rejects.toThrow('client went away');
  });
});
