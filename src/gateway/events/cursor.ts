// Event feed cursors: opaque to clients ("c1." + the feed position in base 36), so the encoding
// can change under a new prefix while old cursors keep working.

// 12 digits: below 2^63 (PostgreSQL's bigint).
export const cursorPattern = /^c1\.[0-9a-z]{1,12}$/;

export const encodeCursor = (seq: bigint) => `c1.${seq.toString(36)}`;

/** The position of a cursor matching cursorPattern. */
export function decodeCursor(cursor: string): bigint {
  let seq = 0n;
  for (const ch of cursor.slice(3)) seq = seq * 36n + BigInt(parseInt(ch, 36));
  return seq;
}
