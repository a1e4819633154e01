import { createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import type { Config } from '../../shared/config.js';
import { inTransaction, type Pool, type Queryable } from '../../shared/db/pool.js';
import { unavailable } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import {
  decryptPrivateKey,
  encryptPrivateKey,
  parseKeyEncryptionKey,
  parseKeyEncryptionKeys,
  type KeyEncryptionKey,
} from './key-encryption.js';

// The keys that sign access tokens. No private half is ever stored in plaintext; one of three modes:
// - env (OAUTH_SIGNING_KEY): every replica signs with that key; only its public half is stored.
// - shared (OAUTH_KEY_ENCRYPTION_KEY): the first replica to start generates an ES256 key and stores
//   it encrypted (AES-256-GCM, see key-encryption.ts) in oauth_signing_keys, under an advisory lock;
//   every replica with the same encryption key loads and decrypts the newest one.
// - replica (neither): each replica generates an ES256 key of its own, held in its memory only, and
//   publishes the public half; it makes a new one every day. Nothing secret is in the database, and
//   a restart loses nothing: the old public half stays until no token it signed can be valid.
// Verification and the JWKS use every stored public key, so any replica verifies any replica's
// tokens, and tokens signed by an older key keep verifying until they expire.

export type SigningAlg = 'ES256' | 'EdDSA';
export type SigningKeyMode = 'env' | 'shared' | 'replica';
export type SigningKey = { kid: string; alg: SigningAlg; privateKey: KeyObject };
export type VerificationKey = { kid: string; alg: SigningAlg; publicKey: KeyObject };
export type PublicJwk = {
  kty: string;
  crv: string;
  x: string;
  y?: string;
  kid: string;
  alg: SigningAlg;
  use: 'sig';
};

export type SigningKeys = {
  readonly mode: SigningKeyMode;
  /** The key new tokens are signed with (loaded or created on first use, retried after a failure). */
  signingKey(): Promise<SigningKey>;
  /** The public key of a kid, or null when no stored key has it. */
  verificationKey(kid: string): Promise<VerificationKey | null>;
  /** Every stored public key, for the JWKS endpoint. */
  publicJwks(): Promise<PublicJwk[]>;
};

export type SigningKeyOptions = Pick<Config['oauth'], 'signingKey' | 'keyEncryptionKey' | 'keyEncryptionKeysPrevious'>;

const advisoryLockId = 4_207_117_306;
const refreshMinIntervalMs = 5_000;
/** A replica key signs for a day; then the replica makes a new one. */
export const replicaKeySigningPeriodSeconds = 86_400;
// A replica key's row is deleted this long after it stopped signing: longer than any token lives
// (OAUTH_TOKEN_TTL_SECONDS is at most a day), with room for clock differences.
const replicaKeyRetention = '1 day 2 hours';
const failureLogIntervalMs = 30_000;

/** A stored key this replica cannot use: a configuration problem, not an outage. */
export class SigningKeyStoreError extends Error {}

function algOf(key: KeyObject): SigningAlg {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  throw new Error('must be an EC P-256 or Ed25519 private key');
}

/**
 * Parses OAUTH_SIGNING_KEY; throws an Error naming the variable (never its value). Accepts real
 * newlines or literal "\n" sequences (env files that cannot hold multi-line values).
 */
export function parseSigningKeyPem(pem: string): { privateKey: KeyObject; alg: SigningAlg } {
  try {
    const privateKey = createPrivateKey({ key: pem.replace(/\\n/g, '\n'), format: 'pem' });
    if (privateKey.type !== 'private') throw new Error('not a private key');
    return { privateKey, alg: algOf(privateKey) };
  } catch (err) {
    throw new Error(
      `invalid configuration: OAUTH_SIGNING_KEY: must be a PKCS#8 PEM private key, EC P-256 or Ed25519 (${(err as Error).message})`,
    );
  }
}

async function publicJwkOf(privateKey: KeyObject): Promise<{ kid: string; jwk: JsonWebKey }> {
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  return { kid: await calculateJwkThumbprint(jwk as Parameters<typeof calculateJwkThumbprint>[0]), jwk };
}

/** Deletes public halves of replica keys no token can still be valid for. */
const pruneReplicaKeys = (db: Queryable) =>
  db.query(
    `DELETE FROM oauth_signing_keys WHERE kind = 'replica' AND signs_until < now() - interval '${replicaKeyRetention}'`,
  );

/**
 * Throws (synchronously, naming the variable, never its value) when OAUTH_SIGNING_KEY,
 * OAUTH_KEY_ENCRYPTION_KEY or OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS is malformed.
 */
export function createSigningKeys(pool: Pool, options: SigningKeyOptions, logger: Logger): SigningKeys {
  const envKey = options.signingKey ? parseSigningKeyPem(options.signingKey) : null;
  const kek = options.keyEncryptionKey
    ? parseKeyEncryptionKey(options.keyEncryptionKey, 'OAUTH_KEY_ENCRYPTION_KEY')
    : null;
  const previous = parseKeyEncryptionKeys(
    options.keyEncryptionKeysPrevious,
    'OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS',
  ).filter((k) => k.id !== kek?.id);
  if (previous.length > 0 && !kek) {
    throw new Error(
      'invalid configuration: OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS: needs OAUTH_KEY_ENCRYPTION_KEY (the key to re-encrypt with)',
    );
  }
  const mode: SigningKeyMode = envKey ? 'env' : kek ? 'shared' : 'replica';

  let ready: Promise<SigningKey> | null = null;
  let rotateAt = Infinity;
  let publicKeys = new Map<string, VerificationKey & { jwk: PublicJwk }>();
  let loadedAt = -Infinity;
  let lastFailureLoggedAt = -Infinity;

  async function loadPublicKeys(): Promise<void> {
    const { rows } = await pool.query('SELECT kid, alg, public_jwk FROM oauth_signing_keys ORDER BY created_at');
    const next = new Map<string, VerificationKey & { jwk: PublicJwk }>();
    for (const r of rows) {
      const jwk = { ...r.public_jwk, kid: r.kid, alg: r.alg, use: 'sig' } as PublicJwk;
      const publicKey = createPublicKey({ key: r.public_jwk as JsonWebKey, format: 'jwk' });
      next.set(r.kid, { kid: r.kid, alg: r.alg, publicKey, jwk });
    }
    publicKeys = next;
    loadedAt = Date.now();
  }

  async function fromEnvironment(key: { privateKey: KeyObject; alg: SigningAlg }): Promise<SigningKey> {
    const { kid, jwk } = await publicJwkOf(key.privateKey);
    await pool.query(
      `INSERT INTO oauth_signing_keys (kid, alg, public_jwk, kind) VALUES ($1, $2, $3, 'env') ON CONFLICT (kid) DO NOTHING`,
      [kid, key.alg, JSON.stringify(jwk)],
    );
    return { kid, alg: key.alg, privateKey: key.privateKey };
  }

  /** Rows encrypted with a retired encryption key, encrypted again with the current one. */
  async function reencrypt(tx: Queryable, current: KeyEncryptionKey): Promise<void> {
    const { rows } = await tx.query(
      `SELECT kid, private_key_encrypted, encryption_key_id FROM oauth_signing_keys WHERE encryption_key_id = ANY($1)`,
      [previous.map((k) => k.id)],
    );
    for (const r of rows) {
      const old = previous.find((k) => k.id === r.encryption_key_id)!;
      const der = decryptPrivateKey(old, r.kid, r.private_key_encrypted);
      await tx.query(
        'UPDATE oauth_signing_keys SET private_key_encrypted = $2, encryption_key_id = $3 WHERE kid = $1',
        [r.kid, encryptPrivateKey(current, r.kid, der), current.id],
      );
      logger.info({ kid: r.kid, from: old.id, to: current.id }, 'access-token signing key re-encrypted');
    }
  }

  async function shared(current: KeyEncryptionKey): Promise<SigningKey> {
    return inTransaction(pool, async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [advisoryLockId]);
      await pruneReplicaKeys(tx);
      if (previous.length > 0) await reencrypt(tx, current);
      const { rows } = await tx.query(
        `SELECT kid, alg, private_key_encrypted, encryption_key_id FROM oauth_signing_keys
          WHERE private_key_encrypted IS NOT NULL AND signs_until IS NULL ORDER BY created_at DESC LIMIT 1`,
      );
      const row = rows[0];
      if (row) {
        if (row.encryption_key_id !== current.id) {
          throw new SigningKeyStoreError(
            `the shared access-token signing key ${row.kid} is encrypted with encryption key ${row.encryption_key_id}, ` +
              `but OAUTH_KEY_ENCRYPTION_KEY is ${current.id} and OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS does not hold it: ` +
              'set the key it was stored with (tokens are not issued meanwhile), or retire the stored key ' +
              `(UPDATE oauth_signing_keys SET signs_until = now() WHERE kid = '${row.kid}') to have a new one made`,
          );
        }
        let der: Buffer;
        try {
          der = decryptPrivateKey(current, row.kid, row.private_key_encrypted);
        } catch (err) {
          throw new SigningKeyStoreError((err as Error).message);
        }
        const privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
        return { kid: row.kid, alg: row.alg, privateKey };
      }
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const { kid, jwk } = await publicJwkOf(privateKey);
      const der = privateKey.export({ format: 'der', type: 'pkcs8' });
      await tx.query(
        `INSERT INTO oauth_signing_keys (kid, alg, public_jwk, kind, private_key_encrypted, encryption_key_id)
         VALUES ($1, 'ES256', $2, 'shared', $3, $4)`,
        [kid, JSON.stringify(jwk), encryptPrivateKey(current, kid, der), current.id],
      );
      logger.info({ kid, encryptionKeyId: current.id }, 'created an access-token signing key (stored encrypted)');
      return { kid, alg: 'ES256' as const, privateKey };
    });
  }

  async function ofThisReplica(): Promise<SigningKey> {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const { kid, jwk } = await publicJwkOf(privateKey);
    await pruneReplicaKeys(pool);
    await pool.query(
      `INSERT INTO oauth_signing_keys (kid, alg, public_jwk, kind, signs_until)
       VALUES ($1, 'ES256', $2, 'replica', now() + make_interval(secs => $3))`,
      [kid, JSON.stringify(jwk), replicaKeySigningPeriodSeconds],
    );
    rotateAt = Date.now() + replicaKeySigningPeriodSeconds * 1000;
    const { rows } = await pool.query(
      `SELECT 1 FROM oauth_signing_keys WHERE private_key_encrypted IS NOT NULL AND signs_until IS NULL LIMIT 1`,
    );
    logger[rows.length > 0 ? 'warn' : 'info'](
      { kid },
      rows.length > 0
        ? 'OAUTH_KEY_ENCRYPTION_KEY is not set but PostgreSQL holds an encrypted shared signing key: this gateway ' +
            'signs with a key of its own instead (held in memory only; its public half is shared)'
        : 'created an access-token signing key of this gateway (held in memory only; its public half is shared)',
    );
    return { kid, alg: 'ES256', privateKey };
  }

  async function init(): Promise<SigningKey> {
    const key = envKey ? await fromEnvironment(envKey) : kek ? await shared(kek) : await ofThisReplica();
    await loadPublicKeys();
    return key;
  }

  const signingKey = (): Promise<SigningKey> => {
    if (ready && Date.now() >= rotateAt) {
      ready = null; // a replica key has signed long enough: make the next one
      rotateAt = Infinity;
    }
    return (ready ??= init().catch((err: unknown) => {
      ready = null; // the next request tries again
      if (Date.now() - lastFailureLoggedAt >= failureLogIntervalMs) {
        lastFailureLoggedAt = Date.now();
        if (err instanceof SigningKeyStoreError) logger.error({ reason: err.message }, 'no access-token signing key');
        else logger.warn({ err }, 'access-token signing key not available');
      }
      throw unavailable('The token signing key store');
    }));
  };

  const refresh = async () => {
    try {
      await loadPublicKeys();
    } catch {
      throw unavailable('The token signing key store');
    }
  };

  return {
    mode,
    signingKey,
    async verificationKey(kid) {
      // A kid we do not know may be a key another replica created since: look again, but not
      // more often than every few seconds (tokens with made-up kids must not hammer the database).
      if (!publicKeys.has(kid) && Date.now() - loadedAt > refreshMinIntervalMs) await refresh();
      return publicKeys.get(kid) ?? null;
    },
    async publicJwks() {
      await signingKey().catch(() => undefined); // this replica's own key is published first
      if (Date.now() - loadedAt > refreshMinIntervalMs) await refresh();
      return [...publicKeys.values()].map((k) => k.jwk);
    },
  };
}
