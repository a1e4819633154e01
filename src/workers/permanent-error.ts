/** A message that can never be applied (undecodable, unknown version): dead-letter it without retrying. */
export class PermanentMessageError extends Error {}
