import type { Scope } from '../../shared/scopes.js';

// The scopes an access token can carry: those of the /connect/v1 operations. A token gets the
// appointment scopes of the API key that serves as client secret (or the subset asked for).
export const tokenScopeDescriptions = {
  'appointments.read': "Read the client's own appointment requests and their status history.",
  'appointments.write': 'Submit and cancel appointment requests.',
} as const satisfies Partial<Record<Scope, string>>;

export type TokenScope = keyof typeof tokenScopeDescriptions;
export const tokenScopes = Object.keys(tokenScopeDescriptions) as TokenScope[];
export const isTokenScope = (s: string): s is TokenScope => (tokenScopes as string[]).includes(s);
