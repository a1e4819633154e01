import { describe, expect, it } from 'vitest';
import { classifyFailure, isConnectionError } from '../../src/shared/db/errors.js';
import { PermanentMessageError } from '../../src/workers/permanent-error.js';

describe('isConnectionError', () => {
  it('recognises PostgreSQL going away', () => {
    expect(isConnectionError(Object.assign(new Error('terminating connection'), { code: '57P01' }))).toBe(true);
    expect(isConnectionError(Object.assign(new Error('x'), { code: '08006' }))).toBe(true);
    expect(isConnectionError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionError(new Error('timeout exceeded when trying to connect'))).toBe(true);
  });

  it('takes anything thrown without throwing itself', () => {
    // kafkajs protocol errors carry numeric codes (27: a rebalance in progress).
    expect(isConnectionError(Object.assign(new Error('The group is rebalancing'), { code: 27 }))).toBe(false);
    expect(isConnectionError(Object.assign(new Error('numeric field overflow'), { code: '22003' }))).toBe(false);
    expect(isConnectionError(undefined)).toBe(false);
    expect(isConnectionError('a string')).toBe(false);
    expect(isConnectionError({ code: null, message: 42 })).toBe(false);
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
    ['53300', 'too many connections'],
    ['55P03', 'lock not available'],
    ['55006', 'object in use'],
    ['57014', 'query canceled (statement timeout)'],
    ['58030', 'I/O error'],
    ['XX000', 'internal error'],
    ['25006', 'read-only transaction (a failover in progress)'],
  ])('%s (%s) is transient', (code) => {
    expect(classifyFailure(pg(code))).toBe('transient');
  });

  it('calls PostgreSQL being unreachable an outage, as isConnectionError does', () => {
    expect(classifyFailure(pg('57P01'))).toBe('outage');
    expect(classifyFailure(pg('08006'))).toBe('outage');
    expect(classifyFailure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe('outage');
    expect(classifyFailure(new Error('Connection terminated unexpectedly'))).toBe('outage');
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
