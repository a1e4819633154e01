/**
 * Errors that mean "PostgreSQL is not reachable now", not a fault of the statement or the data.
 * Takes anything thrown: other libraries' errors carry numeric codes (kafkajs) or none at all.
 */
export function isConnectionError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (
      code.startsWith('08') || // connection exception
      code === '57P01' || // admin shutdown
      code === '57P02' || // crash shutdown
      code === '57P03' || // cannot connect now
      ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH'].includes(code)
    ) {
      return true;
    }
  }
  return (
    typeof message === 'string' &&
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
      message,
    )
  );
}
