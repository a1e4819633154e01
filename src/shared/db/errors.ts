/** Errors that mean "PostgreSQL is not reachable now", not a fault of the statement or the data. */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: string }).code ?? '';
  return (
    code.startsWith('08') || // connection exception
    code === '57P01' || // admin shutdown
    code === '57P02' || // crash shutdown
    code === '57P03' || // cannot connect now
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND'].includes(code) ||
    /Connection terminated|timeout exceeded when trying to connect/i.test((err as Error).message ?? '')
  );
}
