// Time windows given as instants (ISO 8601 with offset) as local clock windows of the draft's day.
// Runs in the routing worker (imported-draft.ts): 50,000 windows cost seconds of CPU.
import type { TimeWindow } from './types.js';

/** One formatter per time zone (a worker serves one draft: one zone): making one costs far more
 *  than formatting with it. */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** True when Intl knows the IANA time zone. Not cached: the gateway calls it with any client's
 *  text (zone names match case-insensitively, so a cache would grow with their spellings). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** 'YYYY-MM-DD' and 'HH:MM' of an instant as the clock on the wall in timeZone shows it. */
function wallClock(instant: string, timeZone: string): { date: string; time: string } {
  const parts = Object.fromEntries(
    formatter(timeZone)
      .formatToParts(new Date(instant))
      .map((p) => [p.type, p.value]),
  );
  return { date: `${parts.year}-${parts.month}-${parts.day}`, time: `${parts.hour}:${parts.minute}` };
}

/**
 * A target's windows (ISO instants) as local clock windows of one day: each is clipped to that
 * day; windows on other days are dropped. `null` means "had windows, none on this day".
 */
export function windowsOnDay(
  windows: readonly { start: string; end: string }[],
  date: string,
  timeZone: string,
): TimeWindow[] | null {
  if (windows.length === 0) return [];
  const out: TimeWindow[] = [];
  for (const w of windows) {
    const start = wallClock(w.start, timeZone);
    const end = wallClock(w.end, timeZone);
    if (end.date < date || start.date > date) continue;
    const from = start.date < date ? '00:00' : start.time;
    const to = end.date > date ? '24:00' : end.time;
    if (to > from) out.push({ start: from, end: to });
  }
  return out.length > 0 ? out : null;
}
