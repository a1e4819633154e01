/**
 * The one table of "PostgreSQL is not serving writes here now": no fault of the statement or
 * the data; another attempt, on another connection, a little later, may succeed. Everything in
 * it is transient everywhere: the gateway answers 503 + Retry-After (http/error-handler.ts,
 * edge/record-then-produce.ts), the workers wait without using an attempt and never dead-letter
 * (classifyFailure: `outage`), the webhook dispatcher retries recording an attempt it made, and a
 * pool drops the connection that saw it (db/pool.ts unusableAfter: it may lead to a read-only old
 * primary, which would otherwise stay in the pool for good).
 *
 * | what                               | SQLSTATE / code / message                                   | seen when                                               |
 * |------------------------------------|-------------------------------------------------------------|---------------------------------------------------------|
 * | connection exception               | class 08 (08000, 08003, 08006, 08001, 08004, 08P01)          | the connection broke; a proxy (PgBouncer) lost its server |
 * | admin / crash shutdown             | 57P01, 57P02                                                | the server stops, restarts, or is demoted               |
 * | cannot connect now                 | 57P03                                                       | starting up, shutting down, in recovery                 |
 * | idle-session timeout               | 57P05                                                       | the server closed an idle connection                    |
 * | read-only transaction              | 25006                                                       | a standby, or an old primary kept reachable read-only during a failover ("cannot execute INSERT in a read-only transaction") |
 * | too many connections               | 53300                                                       | the new primary while every client reconnects           |
 * | socket errors                      | ECONNREFUSED, ECONNRESET, ECONNABORTED, ETIMEDOUT, EPIPE, ENOTFOUND, EAI_AGAIN, EHOSTUNREACH, ENETUNREACH | nothing listens; the address moves (DNS, virtual IP) |
 * | node-postgres without a SQLSTATE   | "Connection terminated" (… unexpectedly, … due to connection timeout), "timeout expired", "timeout exceeded when trying to connect" (pg-pool), "Client has encountered a connection error …", "Client was closed …" | the socket closed; the connect timeout or the pool's wait ran out |
 * | no answer in time                  | "Query read timeout" (node-postgres's query_timeout: DATABASE_QUERY_TIMEOUT_MS) | a commit waits for a synchronous standby that is gone; the server vanished without closing the connection |
 *
 * Not in it: 57P04 (database dropped), 57014 (statement timeout or cancel), 40001 (including a
 * standby's recovery conflict) and other classes: classifyFailure judges those.
 * Takes anything thrown: other libraries' errors carry numeric codes (kafkajs) or none at all.
 */
export function isPostgresUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (code.startsWith('08') || unavailableCodes.has(code))) return true;
  return typeof message === 'string' && unavailableMessage.test(message);
}

const unavailableCodes = new Set([
  '57P01',
  '57P02',
  '57P03',
  '57P05',
  '25006',
  '53300',
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

const unavailableMessage =
  /^(Connection terminated|timeout expired$|timeout exceeded when trying to connect|Query read timeout$|Client has encountered a connection error|Client was closed and is not queryable)/i;

/**
 * A transaction PostgreSQL ended to resolve a race with another (40P01 deadlock detected, 40001
 * serialization failure): the same statements run again are expected to succeed.
 */
export function isLostRace(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return code === '40P01' || code === '40001';
}

/**
 * What a failed attempt at applying a message says about trying again:
 * - `permanent`: the same message fails the same way however often it is tried (its data, or a
 *   statement PostgreSQL refuses): dead-letter it at once;
 * - `transient`: another attempt may succeed (a lost race, contention, a cancelled or starved
 *   statement): retry with backoff, a bounded number of times;
 * - `outage`: PostgreSQL is not serving writes here now (isPostgresUnavailable), or the database
 *   does not match the code: no verdict on the message; wait, however long, and never dead-letter.
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
 * 23P01, see transientSqlStates); PostgreSQL not serving writes (isPostgresUnavailable's table:
 * connection loss, 25006 read-only, 53300, 57P01–57P03) and a database that does not match the
 * code (environmentSqlStates) are an outage; everything else is transient: 40001 serialization
 * failure, 40P01 deadlock, the rest of class 53 (disk full, out of memory), 55P03 lock not
 * available, 57014 statement timeout or cancel, class 58 system errors, XX internal errors, and
 * errors without a SQLSTATE (other libraries, programming errors), so what we cannot judge is
 * retried a bounded number of times.
 */
export function classifyFailure(err: unknown): FailureClass {
  if (typeof err === 'object' && err !== null && (err as { permanent?: unknown }).permanent === true) {
    return 'permanent';
  }
  if (isPostgresUnavailable(err)) return 'outage';
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return 'transient';
  if (Object.hasOwn(environmentSqlStates, code)) return 'outage';
  if (Object.hasOwn(transientSqlStates, code)) return 'transient';
  return Object.hasOwn(permanentSqlStateClasses, code.slice(0, 2)) ? 'permanent' : 'transient';
}
