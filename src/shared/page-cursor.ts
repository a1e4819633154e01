import { z } from 'zod';

// Keyset paging (issue 49): a list ordered newest first by a bigint id hands out, with each page,
// a cursor naming the last row it held; the next page starts below that id, so its cost is the
// page's, however deep into the history it lies (an OFFSET reads and throws away every row before
// the page). The cursor is opaque to clients (base64url of `<list>:<id>`), so its form can change;
// it names its list, so one list's cursor is refused by another.

const idText = /^[1-9]\d{0,18}$/;

export function pageCursor(list: string) {
  const decode = (cursor: string): string | null => {
    const text = Buffer.from(cursor, 'base64url').toString('utf8');
    const prefix = `${list}:`;
    if (!text.startsWith(prefix)) return null;
    const id = text.slice(prefix.length);
    return idText.test(id) && (id.length < 19 || id <= '9223372036854775807') ? id : null;
  };
  return {
    /** The cursor for the page after the row with this id. */
    after: (id: string | number) => Buffer.from(`${list}:${id}`, 'utf8').toString('base64url'),
    /** The query parameter: a cursor of this list, parsed to the id it names. */
    query: () =>
      z
        .string()
        .max(64)
        .transform((cursor, ctx) => {
          const id = decode(cursor);
          if (id === null) {
            ctx.addIssue({
              code: 'custom',
              message: "is not a cursor of this list (send a page's nextCursor as it is)",
            });
            return z.NEVER;
          }
          return id;
        })
        .optional()
        .meta({
          description: "The previous page's `nextCursor`, as it was: the page after it (keyset, newest first).",
        }),
  };
}
