// The headers a dead letter carries besides its message's own (written by the consumer loop,
// src/workers/consumer-loop.ts), and the one a replayed message carries.

/** Where a topic's dead letters go. */
export const deadLetterTopic = (topic: string) => `${topic}.dlq`;

export const deadLetterHeaders = {
  /** The last error's message (at most 1000 characters). */
  error: 'x-dlq-error',
  /** Where the message was: `<topic>/<partition>/<offset>`. */
  origin: 'x-dlq-origin',
  /** The worker kind that gave up on it. */
  worker: 'x-dlq-worker',
  /** `<verdict>/<code>`: permanent or transient, then the SQLSTATE or the error's name (errorClassOf). */
  errorClass: 'x-dlq-error-class',
  /** Set on a message sent again from its dead-letter topic: `<dlq topic>/<partition>/<offset>`. */
  replayOf: 'x-dlq-replay-of',
} as const;

const sqlStatePattern = /^[0-9A-Z]{5}$/;

/** A dead letter's error class: its verdict, then the SQLSTATE (e.g. permanent/23514) or the error's name. */
export function errorClassOf(error: Error, verdict: string): string {
  const code = (error as { code?: unknown }).code;
  return `${verdict}/${typeof code === 'string' && sqlStatePattern.test(code) ? code : error.constructor.name}`;
}

/** True for a message an operator replayed from a dead-letter topic (kinds may take it out of its failed state). */
export const isReplayed = (message: { headers: Record<string, string> }): boolean =>
  deadLetterHeaders.replayOf in message.headers;
