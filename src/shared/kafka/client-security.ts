// How a process reaches a secured cluster: TLS (CA, client certificate for mutual TLS, the
// server's name always checked) and SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER with an OAuth 2
// client-credentials token). Plain data, so the producer thread gets the same settings, and the
// one place that turns them into kafkajs options.
import { readFileSync } from 'node:fs';
import type { KafkaConfig, SASLOptions } from 'kafkajs';

export type KafkaSecurityProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL';

export type KafkaSasl =
  | { mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'; username: string; password: string }
  | { mechanism: 'OAUTHBEARER'; tokenUrl: string; clientId: string; clientSecret: string; scope?: string };

export type KafkaSecurity = {
  protocol: KafkaSecurityProtocol;
  /** PEM file of the CA(s) to trust; without it, the system's trusted CAs. */
  caFile?: string;
  /** PEM client certificate and key, for mutual TLS. */
  certFile?: string;
  keyFile?: string;
  keyPassword?: string;
  sasl?: KafkaSasl;
};

export const plaintext: KafkaSecurity = { protocol: 'PLAINTEXT' };

const read = (file: string, what: string) => {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${what} ${file} cannot be read: ${(err as Error).message}`);
  }
};

/** kafkajs `ssl` and `sasl` for these settings; reads the certificate files (throws naming one it cannot read). */
export function kafkaClientOptions(security: KafkaSecurity): Pick<KafkaConfig, 'ssl' | 'sasl'> {
  const tls = security.protocol === 'SSL' || security.protocol === 'SASL_SSL';
  const options: Pick<KafkaConfig, 'ssl' | 'sasl'> = {};
  if (tls) {
    options.ssl = {
      rejectUnauthorized: true, // never off: an untrusted or misnamed broker is refused
      ...(security.caFile ? { ca: [read(security.caFile, 'KAFKA_SSL_CA_FILE')] } : {}),
      ...(security.certFile ? { cert: read(security.certFile, 'KAFKA_SSL_CERT_FILE') } : {}),
      ...(security.keyFile ? { key: read(security.keyFile, 'KAFKA_SSL_KEY_FILE') } : {}),
      ...(security.keyPassword ? { passphrase: security.keyPassword } : {}),
    };
  }
  if (security.sasl) options.sasl = saslOptions(security.sasl);
  return options;
}

function saslOptions(sasl: KafkaSasl): SASLOptions {
  switch (sasl.mechanism) {
    case 'PLAIN':
      return { mechanism: 'plain', username: sasl.username, password: sasl.password };
    case 'SCRAM-SHA-256':
      return { mechanism: 'scram-sha-256', username: sasl.username, password: sasl.password };
    case 'SCRAM-SHA-512':
      return { mechanism: 'scram-sha-512', username: sasl.username, password: sasl.password };
    case 'OAUTHBEARER':
      return { mechanism: 'oauthbearer', oauthBearerProvider: clientCredentialsToken(sasl) };
  }
}

/** An OAuth 2 client-credentials token, fetched when kafkajs (re)authenticates and kept until shortly before it expires. */
function clientCredentialsToken(sasl: Extract<KafkaSasl, { mechanism: 'OAUTHBEARER' }>) {
  let cached: { value: string; renewAt: number } | null = null;
  return async () => {
    if (cached && Date.now() < cached.renewAt) return { value: cached.value };
    const body = new URLSearchParams({ grant_type: 'client_credentials' });
    if (sasl.scope) body.set('scope', sasl.scope);
    const basic = Buffer.from(`${encodeURIComponent(sasl.clientId)}:${encodeURIComponent(sasl.clientSecret)}`).toString(
      'base64',
    );
    const res = await fetch(sasl.tokenUrl, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    if (!res.ok) throw new KafkaAccessDeniedError(`OAuth token endpoint answered ${res.status} for the Kafka client`);
    const token = (await res.json()) as { access_token?: unknown; expires_in?: unknown };
    if (typeof token.access_token !== 'string')
      throw new KafkaAccessDeniedError('OAuth token endpoint gave no access_token');
    const lifetimeMs = (typeof token.expires_in === 'number' ? token.expires_in : 300) * 1000;
    cached = { value: token.access_token, renewAt: Date.now() + lifetimeMs * 0.8 };
    return { value: cached.value };
  };
}

/** The cluster refused this process (credentials, certificates): retrying cannot help. */
export class KafkaAccessDeniedError extends Error {}

// Node's TLS verification failures (our side refuses the broker) and the alerts a broker sends
// when it refuses our certificate.
const tlsRefusals =
  /^(SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|CERT_REVOKED|CERT_UNTRUSTED|CERT_REJECTED|ERR_TLS_CERT_ALTNAME_INVALID|ERR_SSL_.*ALERT_(BAD_CERTIFICATE|CERTIFICATE_REQUIRED|UNKNOWN_CA|CERTIFICATE_UNKNOWN|ACCESS_DENIED|HANDSHAKE_FAILURE))$/;

/**
 * Why the cluster refused this process, when err says so (SASL authentication failed, a
 * certificate refused either way, an authorization error); null for anything else (unreachable,
 * timeouts: those are waited out).
 */
export function accessDeniedReason(err: unknown): string | null {
  type E = {
    name?: unknown;
    message?: unknown;
    code?: unknown;
    type?: unknown;
    cause?: unknown;
    originalError?: unknown;
  };
  let e = err as E | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 6; depth++) {
    const name = typeof e.name === 'string' ? e.name : '';
    const message = typeof e.message === 'string' ? e.message : '';
    const code = typeof e.code === 'string' ? e.code : '';
    if (e instanceof KafkaAccessDeniedError) return message;
    if (name === 'KafkaJSSASLAuthenticationError') return `SASL authentication refused: ${message}`;
    if (tlsRefusals.test(code)) return `TLS refused (${code}): ${message}`;
    if (typeof e.type === 'string' && /AUTHORIZATION_FAILED|SASL_AUTHENTICATION_FAILED/.test(e.type))
      return `refused by the cluster (${e.type}): ${message}`;
    e = (e.cause ?? e.originalError) as E | undefined;
  }
  return null;
}
