import type { Config } from '../../shared/config.js';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import type { Authenticator } from '../auth/authenticate.js';
import type { RouteDefinition } from '../routes/route-definition.js';
import { createAccessTokenAuthenticator } from './access-token-authenticator.js';
import { oauthRoutes } from './routes.js';
import { createSigningKeys, type SigningKeys } from './signing-keys.js';
import { createTokenIssuer } from './token-issuer.js';

export type OAuth = {
  keys: SigningKeys;
  /** Authenticates `Authorization: Bearer <access token>` on accessToken routes. */
  authenticate: Authenticator;
  routes(): RouteDefinition[];
};

/**
 * The gateway's OAuth 2.0 authorization server and resource-server check, in one place. The
 * signing key is loaded (or created) at once, in the background; a failure is retried on use.
 */
export function createOAuth(deps: { pool: Pool; config: Config; logger: Logger }): OAuth {
  const { pool, config, logger } = deps;
  const keys = createSigningKeys(pool, config.oauthSigningKey, logger);
  keys.signingKey().catch(() => undefined); // warm up at start; logged inside
  const issue = createTokenIssuer(pool, keys, config);
  return {
    keys,
    authenticate: createAccessTokenAuthenticator(pool, keys, config),
    routes: () => oauthRoutes({ issue, keys }, config),
  };
}
