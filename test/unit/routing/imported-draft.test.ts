import { describe, expect, it } from 'vitest';
import { RouteInputError } from '../../../src/routing/errors.js';
import { suggestImportedDraft, type ImportedTarget } from '../../../src/routing/imported-draft.js';
import { maxTargets } from '../../../src/routing/problem.js';

const plan = {
  depot: { lat: 52.5, lon: 13.4 },
  date: '2026-11-23',
  timeZone: 'Europe/Berlin',
  vehicles: 2,
  shift: { start: '07:00', end: '19:00' },
};
const site = (externalId: string, timeWindows: ImportedTarget['timeWindows']): ImportedTarget => ({
  externalId,
  lat: 52.52,
  lon: 13.41,
  serviceMinutes: 10,
  priority: null,
  timeWindows,
});
const draft = (targets: ImportedTarget[]) => suggestImportedDraft({ ...plan, targetsJson: JSON.stringify(targets) });

/** Intl.DateTimeFormat objects made while `run` runs. */
function dateFormatsMade(run: () => void): number {
  const original = Intl.DateTimeFormat;
  let made = 0;
  Intl.DateTimeFormat = new Proxy(original, {
    construct: (target, args, newTarget) => (made++, Reflect.construct(target, args, newTarget)),
    apply: (target, thisArg, args) => (made++, Reflect.apply(target, thisArg, args)),
  });
  try {
    run();
  } finally {
    Intl.DateTimeFormat = original;
  }
  return made;
}

describe('suggestImportedDraft', () => {
  it("converts windows to the plan's local clock, clipped to the day", () => {
    const result = draft([
      site('morning', [{ start: '2026-11-23T07:00:00Z', end: '2026-11-23T08:00:00Z' }]), // 08:00–09:00 Berlin
      site('late', [{ start: '2026-11-23T22:00:00Z', end: '2026-11-24T02:00:00Z' }]), // 23:00–24:00, after the shift
    ]);
    expect(result.routable).toBe(true);
    if (!result.routable) return;
    const stop = result.routes.flatMap((r) => r.stops).find((s) => s.externalId === 'morning')!;
    expect(stop.arrival >= '08:00' && stop.departure <= '09:00').toBe(true);
    expect(result.unplaced).toEqual([{ externalId: 'late', reason: 'OutsideTimeWindows' }]);
  });

  it('lists targets whose windows all lie on other days first, as OutsideTimeWindows', () => {
    const result = draft([
      { ...site('nowhere', []), lat: null, lon: null },
      site('tomorrow', [{ start: '2026-11-24T07:00:00Z', end: '2026-11-24T08:00:00Z' }]),
      site('any', []),
    ]);
    expect(result).toMatchObject({
      routable: true,
      targets: 3,
      unplaced: [
        { externalId: 'tomorrow', reason: 'OutsideTimeWindows' },
        { externalId: 'nowhere', reason: 'NoCoordinates' },
      ],
    });
  });

  it('is not routable when no target has coordinates and a window that day', () => {
    const result = draft([
      { ...site('nowhere', []), lat: null, lon: null },
      site('tomorrow', [{ start: '2026-11-24T07:00:00Z', end: '2026-11-24T08:00:00Z' }]),
    ]);
    expect(result).toEqual({ targets: 2, routable: false });
  });

  it('makes one date formatter per time zone, not one per window', () => {
    const windows = Array.from({ length: 10 }, (_, w) => ({
      start: `2026-11-23T${String(7 + w).padStart(2, '0')}:00:00Z`,
      end: `2026-11-23T${String(7 + w).padStart(2, '0')}:40:00Z`,
    }));
    const targets = Array.from({ length: 50 }, (_, i) => site(`s${i}`, windows));
    const made = dateFormatsMade(() => draft(targets));
    expect(made).toBeLessThanOrEqual(1);
  });

  it('refuses more than maxTargets targets before converting any window', () => {
    const many = Array.from({ length: maxTargets + 1 }, (_, i) =>
      site(`s${i}`, [{ start: 'not an instant', end: 'not an instant' }]),
    );
    expect(() => draft(many)).toThrow(RouteInputError);
    expect(() => draft(many)).toThrow(`at most ${maxTargets}`);
  });
});
