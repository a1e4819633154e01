// 'HH:MM' <-> minutes since midnight of the draft's date.
import { RouteInputError } from './errors.js';

const clockPattern = /^(\d{2}):(\d{2})$/;

export function parseClock(value: string, field: string): number {
  const m = clockPattern.exec(value);
  const minutes = m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
  if (!m || Number(m[2]) > 59 || minutes > 24 * 60) {
    throw new RouteInputError(`${field} must be a time 'HH:MM' between 00:00 and 24:00, got ${JSON.stringify(value)}`);
  }
  return minutes;
}

/** Rounds to the nearest minute: integer window bounds stay respected (t in [a, b] => round(t) in [a, b]). */
export function formatClock(minutes: number): string {
  const m = Math.round(minutes);
  return `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
}
