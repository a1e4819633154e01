import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

// Standard Webhooks (https://www.standardwebhooks.com/): headers webhook-id, webhook-timestamp
// (Unix seconds of the attempt) and webhook-signature = `v1,<base64 HMAC-SHA256 of
// "<id>.<timestamp>.<body>">`, space-separated when several secrets are valid (rotation).

/** `whsec_` + base64 of 32 random bytes. */
export const generateWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export type SignedHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

/** The three headers of one attempt, signed with every given secret (current first). */
export function signWebhook(eventId: string, at: Date, body: string, secrets: readonly string[]): SignedHeaders {
  if (secrets.length === 0) throw new Error('no signing secret');
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(eventId, at, body)).join(' '),
  };
}
