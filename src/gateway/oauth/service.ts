import type { Config } from '../../shared/config.js';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import type { Authenticator } from '../auth/authenticate.js';
import type { KeyRecords } from '../auth/key-records.js';
import type { RouteDefinition } from '../routes/route-definition.js';
import { createAccessTokenAuthenticator } from './access-token-authenticator.js';
import { oauthRoutes } from './routes.js';
import { createSigningKeys } from './signing-keys.js';
import { createTokenIssuer } from './token-issuer.js';
import { createTokenThrottle } from './token-throttle.js';

export type OAuth = {
  /** Authenticates `Authorization: Bearer <access token>` on accessToken routes. */
  authenticate: Authenticator;
  routes(): RouteDefinition[];
};

/**
 * The gateway's OAuth 2.0 authorization server and resource-server check, in one place. The
 * signing key is loaded (or created) in the background; a failure is logged and retried on use.
 * Malformed key settings throw here, so the gateway does not start.
 */
export function createOAuth(deps: {
  pool: Pool;
  config: Pick<Config, 'oauth' | 'auth'>;
  logger: Logger;
  keyRecords: KeyRecords;
}): OAuth {
  const { pool, config, logger } = deps;
  const keys = createSigningKeys(pool, config.oauth, logger);
  // Warm up at start (failures are logged inside). A key of this replica's own is made when first
  // needed instead, so a gateway that keeps restarting does not fill the JWKS with unused keys.
  if (keys.mode !== 'replica') keys.signingKey().catch(() => undefined);
  const throttle = createTokenThrottle(config.oauth);
  const issue = createTokenIssuer(deps.keyRecords, keys, config, throttle);
  return {
    authenticate: createAccessTokenAuthenticator(pool, keys, config),
    routes: () => oauthRoutes({ issue, keys, throttle }, config.oauth),
  };
}
