import { createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import type { Pool } from '../../shared/db/pool.js';
import { inTransaction } from '../../shared/db/pool.js';
import { unavailable } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';

// The keys that sign access tokens. With OAUTH_SIGNING_KEY (PKCS#8 PEM, EC P-256 or Ed25519)
// every replica signs with that key; without it, the first replica to start generates an ES256
// key and stores it in oauth_signing_keys (under an advisory lock), and every replica loads the
// newest stored key. Verification and the JWKS use every stored public key, so tokens signed by
// an older key (or another replica's env key) keep verifying until they expire.

export type SigningAlg = 'ES256' | 'EdDSA';
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
  /** The key new tokens are signed with (loaded or created on first use, retried after a failure). */
  signingKey(): Promise<SigningKey>;
  /** The public key of a kid, or null when no stored key has it. */
  verificationKey(kid: string): Promise<VerificationKey | null>;
  /** Every stored public key, for the JWKS endpoint. */
  publicJwks(): Promise<PublicJwk[]>;
};

const advisoryLockId = 4_207_117_306;
const refreshMinIntervalMs = 5_000;

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

export function createSigningKeys(pool: Pool, envKeyPem: string, logger: Logger, now: () => number = Date.now) {
  const envKey = envKeyPem ? parseSigningKeyPem(envKeyPem) : null;
  let ready: Promise<SigningKey> | null = null;
  let publicKeys = new Map<string, VerificationKey & { jwk: PublicJwk }>();
  let loadedAt = -Infinity;

  async function loadPublicKeys(): Promise<void> {
    const { rows } = await pool.query('SELECT kid, alg, public_jwk FROM oauth_signing_keys ORDER BY created_at');
    const next = new Map<string, VerificationKey & { jwk: PublicJwk }>();
    for (const r of rows) {
      const jwk = { ...r.public_jwk, kid: r.kid, alg: r.alg, use: 'sig' } as PublicJwk;
      const publicKey = createPublicKey({ key: r.public_jwk as JsonWebKey, format: 'jwk' });
      next.set(r.kid, { kid: r.kid, alg: r.alg, publicKey, jwk });
    }
    publicKeys = next;
    loadedAt = now();
  }

  async function init(): Promise<SigningKey> {
    let key: SigningKey;
    if (envKey) {
      const { kid, jwk } = await publicJwkOf(envKey.privateKey);
      await pool.query(
        `INSERT INTO oauth_signing_keys (kid, alg, public_jwk, private_pkcs8) VALUES ($1, $2, $3, NULL)
         ON CONFLICT (kid) DO NOTHING`,
        [kid, envKey.alg, JSON.stringify(jwk)],
      );
      key = { kid, alg: envKey.alg, privateKey: envKey.privateKey };
    } else {
      key = await inTransaction(pool, async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1)', [advisoryLockId]);
        const { rows } = await tx.query(
          `SELECT kid, alg, private_pkcs8 FROM oauth_signing_keys WHERE private_pkcs8 IS NOT NULL
            ORDER BY created_at DESC LIMIT 1`,
        );
        if (rows[0]) {
          return {
            kid: rows[0].kid,
            alg: rows[0].alg,
            privateKey: createPrivateKey({ key: rows[0].private_pkcs8, format: 'pem' }),
          };
        }
        const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
        const { kid, jwk } = await publicJwkOf(privateKey);
        const pkcs8 = privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
        await tx.query('INSERT INTO oauth_signing_keys (kid, alg, public_jwk, private_pkcs8) VALUES ($1, $2, $3, $4)', [
          kid,
          'ES256',
          JSON.stringify(jwk),
          pkcs8,
        ]);
        logger.info({ kid }, 'created an access-token signing key');
        return { kid, alg: 'ES256' as const, privateKey };
      });
    }
    await loadPublicKeys();
    return key;
  }

  const signingKey = (): Promise<SigningKey> =>
    (ready ??= init().catch((err: unknown) => {
      ready = null; // the next request tries again
      logger.warn({ err }, 'access-token signing key not available');
      throw unavailable('The token signing key store');
    }));

  const refresh = async () => {
    try {
      await loadPublicKeys();
    } catch {
      throw unavailable('The token signing key store');
    }
  };

  const keys: SigningKeys = {
    signingKey,
    async verificationKey(kid) {
      await signingKey();
      // A kid we do not know may be a key another replica created since: look again, but not
      // more often than every few seconds (tokens with made-up kids must not hammer the database).
      if (!publicKeys.has(kid) && now() - loadedAt > refreshMinIntervalMs) await refresh();
      return publicKeys.get(kid) ?? null;
    },
    async publicJwks() {
      await signingKey();
      if (now() - loadedAt > refreshMinIntervalMs) await refresh();
      return [...publicKeys.values()].map((k) => k.jwk);
    },
  };
  return keys;
}
