/** Our own deadline ran out (withTimeout), as opposed to an error the awaited work reported. */
export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** Rejects with TimeoutError when promise has not settled within ms (the promise itself is not cancelled). */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
