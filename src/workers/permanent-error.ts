/** A message that can never be applied (undecodable, unknown version): dead-letter it without retrying. */
export class PermanentMessageError extends Error {
  /** Read by classifyFailure (shared/db/errors.ts): permanent whatever else the error says. */
  readonly permanent = true;
}
