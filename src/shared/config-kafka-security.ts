import { z } from 'zod';
import type { KafkaSasl, KafkaSecurity } from './kafka/client-security.js';
import { env, oneOf, text } from './config-setting.js';

// TLS and SASL towards the brokers: declared here, checked together (a mechanism needs its
// credentials, files need TLS) and turned into the plain KafkaSecurity the clients take.

type Settings = z.output<typeof settings>;

const settings = z.object({
  protocol: env(
    'KAFKA_SECURITY_PROTOCOL',
    oneOf(['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'], 'PLAINTEXT'),
  ).describe('as Kafka names them'),
  caFile: env('KAFKA_SSL_CA_FILE', text(), '(system CAs)').describe(
    "PEM file of the CA(s) the brokers' certificates are checked against; the broker's host name is always checked",
  ),
  certFile: env('KAFKA_SSL_CERT_FILE', text()).describe(
    'PEM client certificate for mutual TLS (with `KAFKA_SSL_KEY_FILE`)',
  ),
  keyFile: env('KAFKA_SSL_KEY_FILE', text()).describe('PEM key of the client certificate'),
  keyPassword: env('KAFKA_SSL_KEY_PASSWORD', text()).describe("the key's passphrase"),
  saslMechanism: env(
    'KAFKA_SASL_MECHANISM',
    oneOf(['', 'PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'], ''),
  ).describe('required with `SASL_*`'),
  saslUsername: env('KAFKA_SASL_USERNAME', text()).describe('for `PLAIN` and `SCRAM-*`'),
  saslPassword: env('KAFKA_SASL_PASSWORD', text()).describe('for `PLAIN` and `SCRAM-*`'),
  tokenUrl: env('KAFKA_SASL_OAUTHBEARER_TOKEN_URL', z.union([z.literal(''), z.url()]).default('')).describe(
    'for `OAUTHBEARER`: an OAuth 2 token endpoint; the token is fetched when the client (re)authenticates and kept until 80% of its lifetime',
  ),
  clientId: env('KAFKA_SASL_OAUTHBEARER_CLIENT_ID', text()).describe(
    'for `OAUTHBEARER`: the client id at that endpoint (client_secret_basic)',
  ),
  clientSecret: env('KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET', text()).describe('for `OAUTHBEARER`: its client secret'),
  scope: env('KAFKA_SASL_OAUTHBEARER_SCOPE', text()).describe('for `OAUTHBEARER`: the scope asked for'),
});

/** The first inconsistency among the settings, if any: the field and the message. */
function problem(c: Settings): [keyof Settings, string] | null {
  const sasl = c.protocol.startsWith('SASL_');
  const tls = c.protocol.endsWith('SSL');
  if (sasl && !c.saslMechanism) return ['saslMechanism', `is required with KAFKA_SECURITY_PROTOCOL=${c.protocol}`];
  if (!sasl && c.saslMechanism) return ['saslMechanism', 'needs KAFKA_SECURITY_PROTOCOL=SASL_SSL (or SASL_PLAINTEXT)'];
  if (['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'].includes(c.saslMechanism)) {
    if (!c.saslUsername) return ['saslUsername', `is required with ${c.saslMechanism}`];
    if (!c.saslPassword) return ['saslPassword', `is required with ${c.saslMechanism}`];
  }
  if (c.saslMechanism === 'OAUTHBEARER') {
    for (const field of ['tokenUrl', 'clientId', 'clientSecret'] as const)
      if (!c[field]) return [field, 'is required with KAFKA_SASL_MECHANISM=OAUTHBEARER'];
  }
  for (const field of ['caFile', 'certFile', 'keyFile'] as const)
    if (c[field] && !tls) return [field, 'needs KAFKA_SECURITY_PROTOCOL=SSL or SASL_SSL'];
  if (Boolean(c.certFile) !== Boolean(c.keyFile))
    return [c.certFile ? 'keyFile' : 'certFile', 'client certificate and key go together'];
  return null;
}

function securityOf(c: Settings): KafkaSecurity {
  const optional = (v: string) => v || undefined;
  let sasl: KafkaSasl | undefined;
  if (c.saslMechanism === 'OAUTHBEARER')
    sasl = {
      mechanism: 'OAUTHBEARER',
      tokenUrl: c.tokenUrl,
      clientId: c.clientId,
      clientSecret: c.clientSecret,
      scope: optional(c.scope),
    };
  else if (c.saslMechanism) sasl = { mechanism: c.saslMechanism, username: c.saslUsername, password: c.saslPassword };
  return {
    protocol: c.protocol,
    caFile: optional(c.caFile),
    certFile: optional(c.certFile),
    keyFile: optional(c.keyFile),
    keyPassword: optional(c.keyPassword),
    sasl,
  };
}

export const kafkaSecuritySettings = settings
  .superRefine((c, ctx) => {
    const found = problem(c);
    if (found) ctx.addIssue({ code: 'custom', path: [found[0]], message: found[1] });
  })
  .transform(securityOf);
