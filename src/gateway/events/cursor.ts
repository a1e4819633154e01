// Event feed cursors: opaque to clients. "c2." + the client's own position in base 36 (its n-th
// event is n): it says nothing about other clients' events. Anything else, "c1." cursors (the
// position across all clients, before issue 39) included, is not a cursor this API returns: 400.

// 12 digits: below 2^63 (PostgreSQL's bigint).
export const cursorPattern = /^c2\.[0-9a-z]{1,12}$/;

export const encodeCursor = (position: bigint) => `c2.${position.toString(36)}`;

/** The client position of a cursor matching cursorPattern. */
export function decodeCursor(cursor: string): bigint {
  let position = 0n;
  for (const ch of cursor.slice(3)) position = position * 36n + BigInt(parseInt(ch, 36));
  return position;
}
