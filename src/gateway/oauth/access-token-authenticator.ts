import { errors, jwtVerify, type JWTPayload } from 'jose';
import { apiKeyPattern } from '../../shared/api-keys.js';
import type { Config } from '../../shared/config.js';
import type { Pool } from '../../shared/db/pool.js';
import { AppError, unavailable } from '../../shared/errors.js';
import type { Authenticator } from '../auth/authenticate.js';
import type { SigningKeys } from './signing-keys.js';

/** Seconds of clock skew tolerated on exp/iat between the token's signer and its verifier. */
export const clockToleranceSeconds = 5;

const jwtShape = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/; // an empty signature (alg none) is refused later
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type ClientRow = { tenantId: string; rateLimitPerMinute: number | null; uploadBytesPerSecond: number | null } | null;
const maxCacheEntries = 10_000;

const invalid = (message: string) => new AppError('invalid_token', message);

/**
 * Bearer access tokens on /connect/v1 (RFC 6750, RFC 9068 profile): the signature by one of the
 * stored signing keys, typ at+jwt, iss, aud, exp (with clockToleranceSeconds), and that the
 * Integration Client still exists (looked up, cached for AUTH_CACHE_TTL_MS). The token's scopes
 * are the ones it was issued with; a key revoked after issuance stops minting new tokens, and the
 * short token lifetime bounds how long an issued one lives.
 *
 * That lifetime is enforced here too, not only trusted to the issuer: iat is required and not in
 * the future, the token is at most OAUTH_TOKEN_TTL_SECONDS old (jose's maxTokenAge) and exp - iat
 * is at most OAUTH_TOKEN_TTL_SECONDS (each with clockToleranceSeconds). So a token minted with a
 * signing key outside the token endpoint cannot live longer than the ones the endpoint issues.
 */
export function createAccessTokenAuthenticator(
  pool: Pool,
  keys: SigningKeys,
  config: Pick<Config, 'oauth' | 'auth'>,
): Authenticator {
  const clients = new Map<string, { row: ClientRow; fetchedAt: number }>();
  const maxLifetimeSeconds = config.oauth.tokenTtlSeconds + clockToleranceSeconds;
  const livesTooLong = (p: JWTPayload | undefined) =>
    typeof p?.exp === 'number' && typeof p.iat === 'number' && p.exp - p.iat > maxLifetimeSeconds;
  const tooLong = () =>
    invalid(`The access token lives longer than this service issues tokens for (${config.oauth.tokenTtlSeconds} s).`);

  async function client(clientId: string): Promise<ClientRow> {
    const hit = clients.get(clientId);
    if (hit && Date.now() - hit.fetchedAt < config.auth.cacheTtlMs) return hit.row;
    let row: ClientRow;
    try {
      const { rows } = await pool.query(
        'SELECT tenant_id, rate_limit_per_minute, upload_bytes_per_second FROM integration_clients WHERE id = $1',
        [clientId],
      );
      const r = rows[0];
      row = r
        ? {
            tenantId: r.tenant_id,
            rateLimitPerMinute: r.rate_limit_per_minute,
            uploadBytesPerSecond: r.upload_bytes_per_second,
          }
        : null;
    } catch {
      throw unavailable('The credential store');
    }
    if (clients.size >= maxCacheEntries) clients.delete(clients.keys().next().value!);
    clients.set(clientId, { row, fetchedAt: Date.now() });
    return row;
  }

  async function verify(token: string): Promise<JWTPayload> {
    try {
      const { payload } = await jwtVerify(
        token,
        async (header) => {
          if (!header.kid) throw invalid('The access token names no signing key (kid).');
          const key = await keys.verificationKey(header.kid);
          if (!key) throw invalid('The access token was not signed by a key of this service.');
          if (header.alg !== key.alg) throw invalid('The access token algorithm does not match its key.');
          return key.publicKey;
        },
        {
          issuer: config.oauth.issuer,
          audience: config.oauth.audience,
          typ: 'at+jwt',
          algorithms: ['ES256', 'EdDSA'],
          clockTolerance: clockToleranceSeconds,
          // iat present, not after now + tolerance, and not older than the lifetime + tolerance.
          maxTokenAge: config.oauth.tokenTtlSeconds,
          requiredClaims: ['exp', 'iat', 'sub', 'jti', 'client_id', 'scope'],
          currentDate: new Date(),
        },
      );
      if (livesTooLong(payload)) throw tooLong();
      return payload;
    } catch (err) {
      if (err instanceof AppError) throw err;
      if (err instanceof errors.JWTExpired) {
        // Older than the lifetime but exp still ahead: a token no endpoint of ours issued. (The
        // signature was verified before the claims: the payload is the signer's.)
        if (err.claim === 'iat' && livesTooLong(err.payload)) throw tooLong();
        throw new AppError('expired_token', 'The access token has expired.');
      }
      if (err instanceof errors.JWTClaimValidationFailed) {
        throw invalid(`The access token is not valid here (${err.claim} claim).`);
      }
      throw invalid('The access token is invalid (signature, header or claims).');
    }
  }

  return async (authorization) => {
    if (!authorization) {
      throw new AppError(
        'missing_credential',
        'Send Authorization: Bearer <access token> (from POST /connect/v1/oauth/token).',
      );
    }
    const match = /^Bearer ([^\s]+)$/i.exec(authorization.trim());
    if (!match || !jwtShape.test(match[1]!)) {
      const apiKey = match && apiKeyPattern.test(match[1]!);
      throw new AppError(
        'malformed_credential',
        apiKey
          ? 'API keys are not accepted here: exchange one for an access token at POST /connect/v1/oauth/token.'
          : 'The Authorization header must be "Bearer <access token>".',
      );
    }
    const payload = await verify(match[1]!);
    const clientId = payload.client_id;
    if (typeof clientId !== 'string' || clientId !== payload.sub || !uuidPattern.test(clientId)) {
      throw invalid('The access token names no valid client.');
    }
    if (typeof payload.scope !== 'string') throw invalid('The access token has no scope claim.');
    const row = await client(clientId);
    if (!row) throw invalid('The Integration Client of this access token no longer exists.');
    return {
      clientId,
      tenantId: row.tenantId,
      keyId: `token:${String(payload.jti)}`,
      scopes: new Set(payload.scope.split(' ').filter(Boolean)),
      rateLimitPerMinute: row.rateLimitPerMinute,
      uploadBytesPerSecond: row.uploadBytesPerSecond,
    };
  };
}
