import { randomBytes } from 'node:crypto';

// Appointment request ids: `apr_` + a ULID (26 Crockford base32 characters: a 48-bit millisecond
// timestamp, then 80 random bits). Ids sort by creation time; they are opaque to clients.
export const appointmentIdPrefix = 'apr_';
const crockford = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export const appointmentIdPattern = /^apr_[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

/** A ULID for the given time (default now). */
export function ulid(now: number = Date.now(), random: Buffer = randomBytes(10)): string {
  if (!Number.isInteger(now) || now < 0 || now > 2 ** 48 - 1) throw new RangeError(`bad ULID time ${now}`);
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = crockford[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  // 80 random bits → 16 characters of 5 bits each.
  let bits = 0n;
  for (const byte of random.subarray(0, 10)) bits = (bits << 8n) | BigInt(byte);
  let rand = '';
  for (let i = 0; i < 16; i++) {
    rand = crockford[Number(bits & 31n)]! + rand;
    bits >>= 5n;
  }
  return time + rand;
}

export const newAppointmentId = (now?: number): string => `${appointmentIdPrefix}${ulid(now)}`;
