// Event feed cursors: opaque to clients, so the encoding can change under a new prefix while old
// cursors keep working. "c2." + the client's own position in base 36 (its n-th event is n): it
// says nothing about other clients' events. "c1." + a position in the feed across all clients was
// the earlier release's (it counted everyone's events); such cursors are still read (c1-cursor.ts).

// 12 digits: below 2^63 (PostgreSQL's bigint).
export const cursorPattern = /^c[12]\.[0-9a-z]{1,12}$/;

export type Cursor = { version: 1 | 2; position: bigint };

export const encodeCursor = (position: bigint) => `c2.${position.toString(36)}`;

/** The version and position of a cursor matching cursorPattern. */
export function decodeCursor(cursor: string): Cursor {
  let position = 0n;
  for (const ch of cursor.slice(3)) position = position * 36n + BigInt(parseInt(ch, 36));
  return { version: cursor.startsWith('c1.') ? 1 : 2, position };
}
