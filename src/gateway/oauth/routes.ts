import { z } from 'zod';
import type { Config } from '../../shared/config.js';
import { formMediaType } from '../http/body.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import { clockToleranceSeconds } from './access-token-authenticator.js';
import { jwkSetSchema, oauthErrorSchema, tokenRequestSchema, tokenResponseSchema } from './schemas.js';
import { tokenScopes } from './scopes.js';
import type { SigningKeys } from './signing-keys.js';
import { OAuthError } from './oauth-error.js';
import type { TokenIssuer } from './token-issuer.js';
import { throttleWindowSeconds, type TokenThrottle } from './token-throttle.js';

export const tokenPath = '/connect/v1/oauth/token';
export const jwksPath = '/connect/v1/.well-known/jwks.json';

const unauthenticated = new Set(['invalid_client', 'invalid_request']);
const noStore = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/** The token endpoint and the JWKS: no bearer token (the token endpoint authenticates the client itself). */
export function oauthRoutes(
  deps: { issue: TokenIssuer; keys: SigningKeys; throttle: Pick<TokenThrottle, 'failure'> },
  oauth: Config['oauth'],
): RouteDefinition[] {
  return [
    defineRoute({
      method: 'post',
      path: tokenPath,
      operationId: 'issueAccessToken',
      summary: 'Get an access token (OAuth 2.0 client credentials)',
      description:
        'RFC 6749 §4.4. Client authentication: HTTP Basic (`client_id:client_secret`, each form-urlencoded) or the ' +
        'form fields client_id and client_secret, not both. client_id is the Integration Client id, client_secret ' +
        'one of its API keys (not revoked, not expired). Body `application/x-www-form-urlencoded` with ' +
        '`grant_type=client_credentials` and optionally `scope` (space-separated). The token is a JWT (RFC 9068, ' +
        `\`typ: at+jwt\`, ES256 or EdDSA) with iss \`${oauth.issuer}\`, aud \`${oauth.audience}\`, ` +
        `sub and client_id = the client id, scope, iat, exp (${oauth.tokenTtlSeconds} s later) and jti; its ` +
        `verification keys are at ${jwksPath}. It carries the API key's appointment scopes ` +
        `(${tokenScopes.join(', ')}) or the subset asked for; a key with none gets invalid_scope. Errors are RFC 6749 ` +
        '§5.2 bodies (OAuthErrorResponse) for 400, 401 and 429; 413, 415, 500 and 503 use the standard shape. ' +
        `Throttled per gateway replica: ${oauth.tokenClientLimitPerMinute} requests per ` +
        `${throttleWindowSeconds} s that authenticate as one client, and ${oauth.tokenAddressLimitPerMinute} ` +
        `per ${throttleWindowSeconds} s that do not (invalid_client, invalid_request) from one client address ` +
        '(IPv6: per /64); beyond, 429 slow_down with Retry-After. Failures from an address never refuse a valid ' +
        'secret from it. A token is meant to be kept until it expires. ' +
        'Revoking the API key stops new tokens at once; tokens already issued stay valid until they expire.',
      tag: 'OAuth',
      auth: 'none',
      body: tokenRequestSchema,
      requestMediaTypes: [formMediaType],
      // Validated by the handler, so that every request error is an RFC 6749 error body.
      parseBody: (raw) => (raw && typeof raw === 'object' ? (raw as Record<string, string | string[]>) : {}),
      bodyLimitBytes: 8192,
      errorStatuses: [503],
      errorDescriptions: {
        413: 'The body exceeds 8192 bytes (payload_too_large, standard shape).',
        415: 'The body is not application/x-www-form-urlencoded (unsupported_media_type, standard shape).',
        503:
          'The credential or signing-key store (PostgreSQL) is unavailable, or the stored signing key does not ' +
          'decrypt with the configured encryption key (logged) (service_unavailable, standard shape).',
      },
      responses: {
        200: {
          description: 'The access token (Cache-Control: no-store).',
          schema: tokenResponseSchema,
        },
        400: {
          description:
            'invalid_request, unsupported_grant_type or invalid_scope (RFC 6749 §5.2 body, not the standard shape).',
          schema: oauthErrorSchema,
        },
        401: {
          description:
            'invalid_client: unknown client, wrong, revoked or expired secret, or no client authentication ' +
            '(RFC 6749 §5.2 body; WWW-Authenticate: Basic when Basic was used or no authentication was sent).',
          schema: oauthErrorSchema,
        },
        429: {
          description:
            'slow_down: too many token requests for this client, too many that did not authenticate from this client ' +
            'address, or too many body bytes from it (past the upload quota) (RFC 6749 §5.2 body, ' +
            'the code RFC 8628 registers for token responses; not the standard shape). Retry after Retry-After seconds.',
          schema: oauthErrorSchema,
          headers: { 'Retry-After': z.string().meta({ description: 'Seconds to wait before asking again.' }) },
        },
      },
      responseMediaTypes: ['application/json'],
      // A body refused before the handler (not UTF-8, NUL, …) is an RFC 6749 invalid_request too,
      // and one past the address's upload quota a slow_down.
      errorBody: (err, status) =>
        status === 400
          ? { error: 'invalid_request', error_description: err.message }
          : status === 429
            ? { error: 'slow_down', error_description: err.message }
            : undefined,
      async handler({ body, header, remoteAddress }) {
        try {
          const token = await deps.issue({ authorization: header('authorization'), form: body });
          return { status: 200, body: token, headers: noStore };
        } catch (failed) {
          if (!(failed instanceof OAuthError)) throw failed;
          // Only requests that did not authenticate count per address (and are refused past its limit).
          const err = unauthenticated.has(failed.error)
            ? await deps.throttle.failure(remoteAddress).then(
                () => failed,
                (e: unknown) => e,
              )
            : failed;
          if (!(err instanceof OAuthError)) throw err;
          return {
            status: err.status,
            body: { error: err.error, error_description: err.description },
            headers: {
              ...noStore,
              ...(err.status === 401 && err.basicChallenge ? { 'WWW-Authenticate': 'Basic realm="connect"' } : {}),
              ...(err.retryAfterSeconds !== undefined ? { 'Retry-After': String(err.retryAfterSeconds) } : {}),
            },
          };
        }
      },
    }),
    defineRoute({
      method: 'get',
      path: jwksPath,
      operationId: 'getJsonWebKeySet',
      summary: 'The public keys that verify access tokens (JWKS)',
      description:
        'Every key whose tokens the gateway accepts, by kid (RFC 7517). Gateway replicas publish their keys through ' +
        "PostgreSQL (one shared key, or one per replica), so any replica verifies any replica's tokens. Verifiers " +
        `should allow ${clockToleranceSeconds} s of clock skew, refuse tokens whose exp - iat exceeds ${oauth.tokenTtlSeconds} s, ` +
        'and fetch the set again when they meet an unknown kid.',
      tag: 'OAuth',
      auth: 'none',
      errorStatuses: [503],
      errorDescriptions: { 503: 'The signing-key store (PostgreSQL) is unavailable (service_unavailable).' },
      responses: { 200: { description: 'The key set (cacheable for 5 minutes).', schema: jwkSetSchema } },
      async handler() {
        const keys = await deps.keys.publicJwks();
        return { status: 200, body: { keys }, headers: { 'Cache-Control': 'public, max-age=300' } };
      },
    }),
  ];
}
