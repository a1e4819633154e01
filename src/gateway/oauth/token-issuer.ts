import { randomUUID, timingSafeEqual } from 'node:crypto';
import { SignJWT } from 'jose';
import { apiKeyPattern, hashApiKey } from '../../shared/api-keys.js';
import type { Config } from '../../shared/config.js';
import type { ApiKeyRecord } from '../auth/api-key-store.js';
import type { KeyRecords } from '../auth/key-records.js';
import { OAuthError } from './oauth-error.js';
import { isTokenScope, type TokenScope } from './scopes.js';
import type { SigningKeys } from './signing-keys.js';
import type { TokenThrottle } from './token-throttle.js';

export type TokenRequest = {
  /** The Authorization header (HTTP Basic client authentication), or ''. */
  authorization: string;
  /** The form parameters (a repeated parameter arrives as an array). */
  form: Record<string, string | string[]>;
};

export type TokenResponse = { access_token: string; token_type: 'Bearer'; expires_in: number; scope: string };

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** application/x-www-form-urlencoded decoding of one Basic credential part (RFC 6749 §2.3.1). */
function formDecode(s: string): string | null {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

type Credentials = { clientId: string; secret: string; basic: boolean };

function clientCredentials(req: TokenRequest): Credentials {
  const form = req.form;
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.authorization);
  const inForm = form.client_id !== undefined || form.client_secret !== undefined;
  if (req.authorization && !basic) {
    throw new OAuthError('invalid_client', 'Client authentication must be HTTP Basic (client_id:client_secret).', true);
  }
  if (basic && inForm) {
    throw new OAuthError('invalid_request', 'Use one client authentication method: HTTP Basic or form fields.');
  }
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const clientId = colon < 0 ? null : formDecode(decoded.slice(0, colon));
    const secret = colon < 0 ? null : formDecode(decoded.slice(colon + 1));
    if (clientId === null || secret === null) {
      throw new OAuthError('invalid_client', 'The HTTP Basic credentials are not client_id:client_secret.', true);
    }
    return { clientId, secret, basic: true };
  }
  if (typeof form.client_id !== 'string' || typeof form.client_secret !== 'string') {
    throw new OAuthError(
      'invalid_client',
      'Authenticate the client: HTTP Basic, or the form fields client_id and client_secret.',
      true,
    );
  }
  return { clientId: form.client_id, secret: form.client_secret, basic: false };
}

/**
 * The client credentials grant (RFC 6749 §4.4): the client id is the Integration Client's id and
 * the secret one of its API keys (not revoked, not expired). The token carries the key's
 * appointment scopes, or the subset asked for. Each request that authenticates counts against the
 * client's throttle (429 slow_down beyond); failed authentications count only per address (by the
 * route). A secret is checked against its cached record first (a made-up or refused secret costs
 * no query), and one that passes is read again from PostgreSQL, so revoking a key stops new tokens
 * at once.
 */
export function createTokenIssuer(
  records: KeyRecords,
  keys: SigningKeys,
  config: Pick<Config, 'oauth' | 'auth'>,
  throttle: Pick<TokenThrottle, 'client'>,
) {
  return async function issue(req: TokenRequest): Promise<TokenResponse> {
    for (const [name, value] of Object.entries(req.form)) {
      if (Array.isArray(value)) throw new OAuthError('invalid_request', `The parameter ${name} is repeated.`);
    }
    const grantType = req.form.grant_type;
    if (grantType === undefined || grantType === '') {
      throw new OAuthError('invalid_request', 'The parameter grant_type is missing.');
    }
    const creds = clientCredentials(req);
    const bad = (description: string) => new OAuthError('invalid_client', description, creds.basic);
    if (!uuidPattern.test(creds.clientId) || !apiKeyPattern.test(creds.secret)) {
      throw bad('Unknown client or wrong client secret.');
    }
    const hash = hashApiKey(creds.secret);
    const refusal = (record: ApiKeyRecord | null) => {
      if (!record || !timingSafeEqual(record.keyHash, hash) || record.clientId !== creds.clientId.toLowerCase()) {
        return bad('Unknown client or wrong client secret.');
      }
      if (record.revokedAt) return bad('The API key used as client secret has been revoked.');
      if (record.expiresAt && record.expiresAt.getTime() <= Date.now()) {
        return bad('The API key used as client secret has expired.');
      }
      return null;
    };
    const asked = Date.now();
    const cached = await records.lookup(hash, config.auth.cacheTtlMs);
    const refusedCached = refusal(cached);
    if (refusedCached) throw refusedCached;
    await throttle.client(cached!.clientId);
    // Read again unless the record above was read for this very request.
    const record = await records.lookup(hash, Date.now() - asked + 1);
    const refused = refusal(record);
    if (refused) throw refused;
    if (grantType !== 'client_credentials') {
      throw new OAuthError('unsupported_grant_type', 'Only grant_type=client_credentials is supported.');
    }

    const granted = record!.scopes.filter(isTokenScope);
    let scopes: TokenScope[] = granted;
    if (typeof req.form.scope === 'string' && req.form.scope.trim() !== '') {
      const asked = [...new Set(req.form.scope.trim().split(/ +/))];
      const refused = asked.filter((s) => !(granted as string[]).includes(s));
      if (refused.length > 0) {
        throw new OAuthError(
          'invalid_scope',
          `Not granted to this client: ${refused.join(' ')}. It may ask for: ${granted.join(' ') || '(none)'}.`,
        );
      }
      scopes = asked as TokenScope[];
    }
    if (scopes.length === 0) {
      throw new OAuthError(
        'invalid_scope',
        'The API key has no appointment scope (appointments.read, appointments.write).',
      );
    }

    const key = await keys.signingKey();
    const iat = Math.floor(Date.now() / 1000);
    const scope = scopes.join(' ');
    const clientId = record!.clientId;
    const accessToken = await new SignJWT({ client_id: clientId, scope })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
      .setIssuer(config.oauth.issuer)
      .setAudience(config.oauth.audience)
      .setSubject(clientId)
      .setIssuedAt(iat)
      .setExpirationTime(iat + config.oauth.tokenTtlSeconds)
      .setJti(randomUUID())
      .sign(key.privateKey);
    return { access_token: accessToken, token_type: 'Bearer', expires_in: config.oauth.tokenTtlSeconds, scope };
  };
}

export type TokenIssuer = ReturnType<typeof createTokenIssuer>;
