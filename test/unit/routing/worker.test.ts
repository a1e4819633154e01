import { describe, expect, it } from 'vitest';
import { draftDocument } from '../../../src/routing/draft-document.js';
import { RouteInputError } from '../../../src/routing/errors.js';
import { suggestImportedDraft } from '../../../src/routing/imported-draft.js';
import { runRouteSuggestionInWorker } from '../../../src/routing/run-in-worker.js';
import { suggestRoutes } from '../../../src/routing/suggest.js';
import { asImported, randomDraft } from './helpers.js';

describe('runRouteSuggestionInWorker', () => {
  it("answers the direct call's document as JSON text: the routes of the same draft given in clock windows", async () => {
    const input = randomDraft(3, 300, { vehicles: 4, windowShare: 0.3 });
    const inWorker = await runRouteSuggestionInWorker(asImported(input));
    const direct = suggestImportedDraft(asImported(input));
    if (!inWorker.routable || !direct.routable) throw new Error('expected a routable draft');
    const document = draftDocument(direct);
    expect(inWorker.documentJson).toBe(JSON.stringify(document));
    expect(inWorker).toMatchObject({ targets: 300, placed: document.summary.placed });
    expect(document.routes).toEqual(draftDocument({ targets: 300, ...suggestRoutes(input) }).routes);
  });

  it('answers only the target count when nothing is routable', async () => {
    const input = randomDraft(5, 3);
    const noCoordinates = { ...input, targets: input.targets.map((t) => ({ ...t, lat: null, lon: null })) };
    expect(await runRouteSuggestionInWorker(asImported(noCoordinates))).toEqual({ targets: 3, routable: false });
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
