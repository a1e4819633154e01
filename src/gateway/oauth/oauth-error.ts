import type { OAuthErrorCode } from './schemas.js';

/** A token endpoint error, answered with an RFC 6749 §5.2 body. */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    /** invalid_client with HTTP Basic: answer 401 with WWW-Authenticate: Basic. */
    readonly basicChallenge = false,
    /** slow_down: seconds until the client may ask again (Retry-After). */
    readonly retryAfterSeconds?: number,
  ) {
    super(description);
  }
  get status(): number {
    return this.error === 'invalid_client' ? 401 : this.error === 'slow_down' ? 429 : 400;
  }
}
