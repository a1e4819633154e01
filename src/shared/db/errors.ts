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

/**
 * What a failed attempt at applying a message says about trying again:
 * - `permanent`: the same message fails the same way however often it is tried (its data, or a
 *   statement PostgreSQL refuses): dead-letter it at once;
 * - `transient`: another attempt may succeed (a lost race, contention, a cancelled or starved
 *   statement): retry with backoff, a bounded number of times;
 * - `outage`: PostgreSQL is not reachable (isConnectionError): no verdict on the message; wait.
 */
export type FailureClass = 'permanent' | 'transient' | 'outage';

/** SQLSTATE classes whose every code is permanent, unless listed in transientSqlStates. */
const permanentSqlStateClasses: Record<string, string> = {
  '21': 'cardinality violation (e.g. ON CONFLICT DO UPDATE affecting a row twice)',
  '22': 'data exception (numeric overflow, invalid text representation, bad encoding, …)',
  '23': 'integrity constraint violation (not null, foreign key, check)',
  '42': 'syntax error or access rule violation (undefined table/column/function, privilege)',
  '44': 'WITH CHECK OPTION violation',
  '54': 'program limit exceeded (e.g. an index row too large for its value)',
};

/** Codes that are transient although their class is permanent. */
const transientSqlStates: Record<string, string> = {
  // A concurrent transaction inserting the same key is a race a retry resolves (the retry sees
  // the committed row); a unique violation that is the data's own fault fails every retry and
  // is dead-lettered once the attempts are used up.
  '23505': 'unique violation',
  '23P01': 'exclusion violation (the same race as a unique violation)',
};

/**
 * Codes of class 42 that say the database does not match the code (migrations not run, grants
 * missing), not that the message is bad: dead-lettering would fail every message of a deploy, so
 * they count as an outage and the partition waits until an operator fixes the database.
 */
const environmentSqlStates: Record<string, string> = {
  '42P01': 'undefined table',
  '42703': 'undefined column',
  '42883': 'undefined function',
  '42501': 'insufficient privilege',
};

/**
 * Classifies anything thrown while applying a message; the one table of the workers' failure
 * policy (src/workers/consumer-loop.ts). An error that says of itself `permanent: true` (the
 * workers' PermanentMessageError: undecodable, unknown version) is permanent. A PostgreSQL error
 * is judged by its SQLSTATE: classes 21, 22, 23, 42, 44 and 54 are permanent (but 23505 and
 * 23P01, see transientSqlStates); connection failures (class 08, 57P01–57P03, socket errors)
 * and a database that does not match the code (environmentSqlStates) are an outage; everything
 * else is transient: 40001 serialization failure, 40P01 deadlock, class 53 insufficient
 * resources, 55P03 lock not available, 57014 statement timeout or cancel, class 58 system errors,
 * XX internal errors, and errors without a SQLSTATE (other libraries, programming errors), so
 * what we cannot judge is retried a bounded number of times.
 */
export function classifyFailure(err: unknown): FailureClass {
  if (typeof err === 'object' && err !== null && (err as { permanent?: unknown }).permanent === true) {
    return 'permanent';
  }
  if (isConnectionError(err)) return 'outage';
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return 'transient';
  if (Object.hasOwn(environmentSqlStates, code)) return 'outage';
  if (Object.hasOwn(transientSqlStates, code)) return 'transient';
  return Object.hasOwn(permanentSqlStateClasses, code.slice(0, 2)) ? 'permanent' : 'transient';
}
