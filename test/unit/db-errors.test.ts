import { describe, expect, it } from 'vitest';
import { classifyFailure, isPostgresUnavailable } from '../../src/shared/db/errors.js';
import { PermanentMessageError } from '../../src/workers/permanent-error.js';

describe('isPostgresUnavailable: PostgreSQL is not serving writes here now', () => {
  const pg = (code: string, message = `sqlstate ${code}`) => Object.assign(new Error(message), { code });

  it.each([
    ['08000', 'connection exception'],
    ['08003', 'connection does not exist'],
    ['08006', 'connection failure'],
    ['08001', 'unable to establish a connection'],
    ['08P01', 'protocol violation (how PgBouncer reports a lost server)'],
    ['57P01', 'terminating connection due to administrator command'],
    ['57P02', 'crash shutdown'],
    ['57P03', 'the database system is starting up / in recovery'],
    ['57P05', 'terminating connection due to idle-session timeout'],
    ['25006', 'cannot execute INSERT in a read-only transaction (an old primary during a failover)'],
    ['53300', 'too many connections (the new primary while every client reconnects)'],
  ])('%s (%s)', (code, message) => {
    expect(isPostgresUnavailable(pg(code, message))).toBe(true);
  });

  it.each([
    'ECONNREFUSED',
    'ECONNRESET',
    'ECONNABORTED',
    'ETIMEDOUT',
    'EPIPE',
    'ENOTFOUND',
    'EAI_AGAIN',
    'EHOSTUNREACH',
    'ENETUNREACH',
  ])('socket error %s', (code) => {
    expect(isPostgresUnavailable(Object.assign(new Error(`connect ${code} 10.0.0.5:5432`), { code }))).toBe(true);
  });

  it.each([
    'Connection terminated unexpectedly',
    'Connection terminated',
    'Connection terminated due to connection timeout',
    'timeout expired',
    'timeout exceeded when trying to connect',
    'Query read timeout',
    'Client has encountered a connection error and is not queryable',
    'Client was closed and is not queryable',
  ])('node-postgres without a SQLSTATE: "%s"', (message) => {
    expect(isPostgresUnavailable(new Error(message))).toBe(true);
  });

  it.each([
    ['57P04', 'database dropped'],
    ['57014', 'statement timeout or cancel'],
    ['40001', "serialization failure (also a standby's recovery conflict)"],
    ['53100', 'disk full'],
    ['22003', 'numeric field overflow'],
    ['23505', 'unique violation'],
    ['42P01', 'undefined table'],
  ])('not %s (%s): classifyFailure judges it', (code, message) => {
    expect(isPostgresUnavailable(pg(code, message))).toBe(false);
  });

  it('judges a message only by how it starts, not by text quoted in it', () => {
    expect(isPostgresUnavailable(new Error('invalid input syntax: "Connection terminated"'))).toBe(false);
    expect(isPostgresUnavailable(new Error('query read timeout expired'))).toBe(false);
  });

  it('takes anything thrown without throwing itself', () => {
    // kafkajs protocol errors carry numeric codes (27: a rebalance in progress).
    expect(isPostgresUnavailable(Object.assign(new Error('The group is rebalancing'), { code: 27 }))).toBe(false);
    expect(isPostgresUnavailable(undefined)).toBe(false);
    expect(isPostgresUnavailable('a string')).toBe(false);
    expect(isPostgresUnavailable({ code: null, message: 42 })).toBe(false);
  });
});

describe('classifyFailure', () => {
  const pg = (code: string) => Object.assign(new Error(`sqlstate ${code}`), { code });

  it.each([
    ['22003', 'numeric value out of range'],
    ['22P02', 'invalid text representation'],
    ['22001', 'string data right truncation'],
    ['22021', 'character not in repertoire'],
    ['22P05', 'untranslatable character'],
    ['22008', 'datetime field overflow'],
    ['23502', 'not-null violation'],
    ['23503', 'foreign key violation'],
    ['23514', 'check violation'],
    ['21000', 'cardinality violation'],
    ['42601', 'syntax error'],
    ['42804', 'datatype mismatch'],
    ['44000', 'WITH CHECK OPTION violation'],
    ['54000', 'program limit exceeded (index row too large)'],
  ])('%s (%s) is permanent', (code) => {
    expect(classifyFailure(pg(code))).toBe('permanent');
  });

  it.each([
    ['42P01', 'undefined table'],
    ['42703', 'undefined column'],
    ['42883', 'undefined function'],
    ['42501', 'insufficient privilege'],
  ])('%s (%s), a database that does not match the code, is an outage: wait, dead-letter nothing', (code) => {
    expect(classifyFailure(pg(code))).toBe('outage');
  });

  it.each([
    ['23505', 'unique violation: a concurrent insert of the same key'],
    ['23P01', 'exclusion violation: the same race'],
    ['40001', 'serialization failure'],
    ['40P01', 'deadlock detected'],
    ['53100', 'disk full'],
    ['53200', 'out of memory'],
    ['55P03', 'lock not available'],
    ['55006', 'object in use'],
    ['57014', 'query canceled (statement timeout)'],
    ['58030', 'I/O error'],
    ['XX000', 'internal error'],
  ])('%s (%s) is transient', (code) => {
    expect(classifyFailure(pg(code))).toBe('transient');
  });

  it.each([
    ['25006', 'cannot execute INSERT in a read-only transaction'],
    ['57P01', 'terminating connection due to administrator command'],
    ['57P03', 'the database system is starting up'],
    ['08006', 'connection failure'],
    ['53300', 'sorry, too many clients already'],
  ])('%s (%s), PostgreSQL not serving writes, is an outage: wait, never dead-letter', (code, message) => {
    expect(classifyFailure(Object.assign(new Error(message), { code }))).toBe('outage');
  });

  it('calls every error isPostgresUnavailable accepts an outage, with or without a SQLSTATE', () => {
    expect(classifyFailure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe('outage');
    expect(classifyFailure(new Error('Connection terminated unexpectedly'))).toBe('outage');
    expect(classifyFailure(new Error('timeout exceeded when trying to connect'))).toBe('outage');
  });

  it('takes an error that says it is permanent at its word (PermanentMessageError)', () => {
    expect(classifyFailure(new PermanentMessageError('message value is not JSON'))).toBe('permanent');
    expect(classifyFailure(Object.assign(new Error('x'), { permanent: true }))).toBe('permanent');
  });

  it('retries what it cannot judge: no SQLSTATE, numeric codes, anything thrown', () => {
    expect(classifyFailure(new Error('bad data'))).toBe('transient');
    expect(classifyFailure(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe('transient');
    expect(classifyFailure(Object.assign(new Error('The group is rebalancing'), { code: 27 }))).toBe('transient');
    expect(classifyFailure(Object.assign(new Error('x'), { code: 'EPERM' }))).toBe('transient');
    expect(classifyFailure(Object.assign(new Error('x'), { permanent: 'yes' }))).toBe('transient');
    expect(classifyFailure(undefined)).toBe('transient');
    expect(classifyFailure('a string')).toBe('transient');
    expect(classifyFailure({ code: null, message: 42 })).toBe('transient');
  });
});
