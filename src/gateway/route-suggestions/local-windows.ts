import type { TimeWindow } from '../../routing/index.js';

/** True when Intl knows the IANA time zone. */
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
    new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
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
