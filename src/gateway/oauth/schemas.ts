import { z } from 'zod';
import { tokenScopes } from './scopes.js';

export const oauthErrorCodes = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'slow_down',
] as const;
export type OAuthErrorCode = (typeof oauthErrorCodes)[number];

/** RFC 6749 §5.2: the token endpoint's own error body (not the standard shape). */
export const oauthErrorSchema = z
  .strictObject({
    error: z.enum(oauthErrorCodes),
    error_description: z.string(),
  })
  .meta({
    id: 'OAuthErrorResponse',
    description:
      'Token endpoint errors follow RFC 6749 §5.2 instead of the standard shape: invalid_request (400: missing or ' +
      'repeated parameter, two client authentication methods), invalid_client (401: unknown client, wrong, revoked ' +
      'or expired secret, or no client authentication), unsupported_grant_type (400: not client_credentials), ' +
      'invalid_scope (400: a scope the client does not have, or no appointment scope at all), slow_down (429: too ' +
      'many token requests from the address or for the client; see Retry-After).',
  });

export const tokenRequestSchema = z
  .object({
    grant_type: z.literal('client_credentials'),
    scope: z
      .string()
      .optional()
      .meta({
        description: `Space-separated subset of the client's scopes (${tokenScopes.join(', ')}); default: all of them.`,
      }),
    client_id: z
      .string()
      .optional()
      .meta({ description: "The Integration Client's id (UUID), when not sent with HTTP Basic." }),
    client_secret: z
      .string()
      .optional()
      .meta({ description: "One of the client's API keys (cis_…), when not sent with HTTP Basic." }),
  })
  .meta({ id: 'OAuthTokenRequest', description: 'RFC 6749 §4.4.2 client credentials grant, form-encoded.' });

export const tokenResponseSchema = z
  .strictObject({
    access_token: z.string().meta({ description: 'A signed JWT (RFC 9068, typ at+jwt).' }),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().min(1).meta({ description: 'Seconds until the token expires.' }),
    scope: z.string().meta({ description: 'The granted scopes, space-separated.' }),
  })
  .meta({ id: 'OAuthTokenResponse', description: 'RFC 6749 §5.1 access token response.' });

export const jwkSchema = z
  .strictObject({
    kty: z.enum(['EC', 'OKP']),
    crv: z.string(),
    x: z.string(),
    y: z.string().optional(),
    kid: z.string(),
    alg: z.enum(['ES256', 'EdDSA']),
    use: z.literal('sig'),
  })
  .meta({ id: 'JsonWebKey', description: 'A public key that signs access tokens (RFC 7517).' });

export const jwkSetSchema = z
  .strictObject({ keys: z.array(jwkSchema) })
  .meta({ id: 'JsonWebKeySet', description: 'Every key whose tokens the gateway accepts (RFC 7517 JWK Set).' });
