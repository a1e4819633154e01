/** connect() made once and shared by its callers; a failed attempt is made again by the next call. */
export function memoConnect(connect: () => Promise<void>): () => Promise<void> {
  let pending: Promise<void> | null = null;
  return () => {
    pending ??= connect().catch((err: unknown) => {
      pending = null; // let the next call try again
      throw err;
    });
    return pending;
  };
}
