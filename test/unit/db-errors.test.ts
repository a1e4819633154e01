import { describe, expect, it } from 'vitest';
import { isConnectionError } from '../../src/shared/db/errors.js';

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
