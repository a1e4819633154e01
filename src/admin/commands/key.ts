import { randomUUID } from 'node:crypto';
import { apiKeyPattern, generateApiKey, hashApiKey } from '../../shared/api-keys.js';
import { inTransaction } from '../../shared/db/pool.js';
import type { Scope } from '../../shared/scopes.js';
import {
  AdminError,
  UsageError,
  durationArg,
  parseOptions,
  required,
  scopesArg,
  sortScopes,
  timestampArg,
  uuidArg,
} from '../args.js';
import type { Command } from '../command.js';
import { tenantOfClient, findApiKeyIds, insertApiKeys, listApiKeys, revokeApiKey, type KeyLookup } from '../store.js';

type Expiry = { at: Date } | { inMs: number } | null;

export const keyCreate: Command<{ clientId: string; scopes: Scope[]; expiry: Expiry }> = {
  name: 'key create',
  synopsis:
    '--client <clientId> --scopes <scope,scope,…|all|""> [--expires-at <ISO 8601> | --expires-in <30d|12h|15m>]',
  summary: 'Create an API key; the key itself is printed this once and only its prefix and SHA-256 are stored.',
  parse(args) {
    const v = parseOptions(args, {
      client: { type: 'string' },
      scopes: { type: 'string' },
      'expires-at': { type: 'string' },
      'expires-in': { type: 'string' },
    });
    const clientId = uuidArg(required(v.client, 'client'), 'client');
    const scopes = scopesArg(required(v.scopes, 'scopes'));
    if (v['expires-at'] !== undefined && v['expires-in'] !== undefined) {
      throw new UsageError('give at most one of --expires-at and --expires-in');
    }
    const expiry: Expiry =
      v['expires-at'] !== undefined
        ? { at: timestampArg(v['expires-at'], 'expires-at') }
        : v['expires-in'] !== undefined
          ? { inMs: durationArg(v['expires-in'], 'expires-in') }
          : null;
    return { clientId, scopes, expiry };
  },
  async run({ pool, warn }, { clientId, scopes, expiry }) {
    // --expires-in counts from now, not from when the command line was parsed.
    const expiresAt = expiry === null ? null : 'at' in expiry ? expiry.at : new Date(Date.now() + expiry.inMs);
    if (expiresAt !== null && expiresAt.getTime() <= Date.now()) {
      warn(`warning: --expires-at ${expiresAt.toISOString()} is not in the future; the key is expired already`);
    }
    const key = generateApiKey();
    const keyId = randomUUID();
    const [row] = await inTransaction(pool, (tx) =>
      insertApiKeys(tx, [{ id: keyId, clientId, prefix: key.prefix, hash: key.hash, expiresAt, scopes }]),
    );
    if (!row) throw new AdminError(`client ${clientId} not found`);
    return { keyId, clientId, apiKey: key.key, prefix: row.prefix, scopes, expiresAt: row.expiresAt };
  },
};

const prefixPattern = /^cis_[0-9a-f]{8}$/i;

/** A key id, a key prefix (`cis_1a2b3c4d`) or, for a leaked key, the whole key. */
function keyLookupArg(value: string): KeyLookup {
  const v = value.trim();
  if (prefixPattern.test(v)) return { by: 'prefix', prefix: v.toLowerCase() };
  if (apiKeyPattern.test(v)) return { by: 'hash', hash: hashApiKey(v) };
  try {
    return { by: 'id', id: uuidArg(v, 'key') };
  } catch {
    throw new AdminError(`--key must be a key id (UUID), a key prefix like cis_1a2b3c4d, or the key itself`);
  }
}

const describeLookup = (l: KeyLookup) =>
  l.by === 'id' ? `key ${l.id}` : l.by === 'prefix' ? `key with prefix ${l.prefix}` : 'key given';

export const keyRevoke: Command<KeyLookup> = {
  name: 'key revoke',
  synopsis: '--key <keyId | cis_xxxxxxxx prefix>',
  summary: 'Revoke an API key (again: keeps the first revocation time).',
  parse(args) {
    const v = parseOptions(args, { key: { type: 'string' } });
    return keyLookupArg(required(v.key, 'key'));
  },
  async run({ pool }, lookup) {
    const ids = await findApiKeyIds(pool, lookup);
    if (ids.length === 0) throw new AdminError(`${describeLookup(lookup)} not found`);
    if (ids.length > 1) {
      throw new AdminError(`${describeLookup(lookup)} is ambiguous (keys ${ids.join(', ')}); revoke by key id`);
    }
    const revoked = await revokeApiKey(pool, ids[0]!);
    if (!revoked) throw new AdminError(`${describeLookup(lookup)} not found`);
    return revoked;
  },
};

export const keyList: Command<{ clientId: string }> = {
  name: 'key list',
  synopsis: '--client <clientId>',
  summary: "List a client's keys (ids, prefixes, scopes and dates; never the key or its hash).",
  parse(args) {
    const v = parseOptions(args, { client: { type: 'string' } });
    return { clientId: uuidArg(required(v.client, 'client'), 'client') };
  },
  async run({ pool }, { clientId }) {
    if (!(await tenantOfClient(pool, clientId))) throw new AdminError(`client ${clientId} not found`);
    const keys = await listApiKeys(pool, clientId);
    return { keys: keys.map((k) => ({ ...k, scopes: sortScopes(k.scopes) })) };
  },
};
