import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/shared/config.js';
import {
  accessDeniedReason,
  KafkaAccessDeniedError,
  kafkaClientOptions,
} from '../../src/shared/kafka/client-security.js';

const refusal = (env: Record<string, string>) => {
  try {
    loadConfig(env);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
};

describe('Kafka security settings', () => {
  it('default to plaintext, topics managed, the broker defaults for replication', () => {
    const c = loadConfig({});
    expect(c.kafka.security).toEqual({ protocol: 'PLAINTEXT' });
    expect(c.kafka.manageTopics).toBe(true);
    expect([c.kafka.topicReplicationFactor, c.kafka.topicMinInsyncReplicas]).toEqual([-1, 0]);
  });

  it('read SASL_SSL with SCRAM and a CA file', () => {
    const c = loadConfig({
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD: 'pw',
      KAFKA_SSL_CA_FILE: '/ca.pem',
      KAFKA_MANAGE_TOPICS: 'false',
    });
    expect(c.kafka.security).toEqual({
      protocol: 'SASL_SSL',
      caFile: '/ca.pem',
      sasl: { mechanism: 'SCRAM-SHA-512', username: 'svc', password: 'pw' },
    });
    expect(c.kafka.manageTopics).toBe(false);
  });

  it.each([
    [{ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL' }, 'KAFKA_SASL_MECHANISM'],
    [{ KAFKA_SASL_MECHANISM: 'PLAIN', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' }, 'KAFKA_SASL_MECHANISM'],
    [{ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256' }, 'KAFKA_SASL_USERNAME'],
    [
      { KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256', KAFKA_SASL_USERNAME: 'u' },
      'KAFKA_SASL_PASSWORD',
    ],
    [{ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'OAUTHBEARER' }, 'KAFKA_SASL_OAUTHBEARER_TOKEN_URL'],
    [{ KAFKA_SSL_CA_FILE: '/ca.pem' }, 'KAFKA_SSL_CA_FILE'],
    [{ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CERT_FILE: '/c.pem' }, 'KAFKA_SSL_KEY_FILE'],
    [{ KAFKA_TOPIC_REPLICATION_FACTOR: '2', KAFKA_TOPIC_MIN_INSYNC_REPLICAS: '3' }, 'KAFKA_TOPIC_MIN_INSYNC_REPLICAS'],
    [{ KAFKA_SECURITY_PROTOCOL: 'TLS' }, 'KAFKA_SECURITY_PROTOCOL'],
  ])('refuse %j naming %s', (env, variable) => {
    expect(refusal(env)).toContain(variable);
  });

  it('become kafkajs options: TLS always verified, certificate files read, SASL mechanism named', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kafka-tls-'));
    for (const f of ['ca.pem', 'c.pem', 'k.pem']) writeFileSync(join(dir, f), `-----${f}-----`);
    const options = kafkaClientOptions({
      protocol: 'SASL_SSL',
      caFile: join(dir, 'ca.pem'),
      certFile: join(dir, 'c.pem'),
      keyFile: join(dir, 'k.pem'),
      sasl: { mechanism: 'SCRAM-SHA-256', username: 'u', password: 'p' },
    });
    expect(options.ssl).toEqual({
      rejectUnauthorized: true,
      ca: ['-----ca.pem-----'],
      cert: '-----c.pem-----',
      key: '-----k.pem-----',
    });
    expect(options.sasl).toEqual({ mechanism: 'scram-sha-256', username: 'u', password: 'p' });
    expect(kafkaClientOptions({ protocol: 'PLAINTEXT' })).toEqual({});
    expect(() => kafkaClientOptions({ protocol: 'SSL', caFile: join(dir, 'missing.pem') })).toThrow(
      /KAFKA_SSL_CA_FILE .*missing\.pem cannot be read/,
    );
  });
});

describe('accessDeniedReason', () => {
  const wrapped = (cause: object) =>
    Object.assign(new Error('retries exceeded'), { name: 'KafkaJSNumberOfRetriesExceeded', cause });
  it.each([
    ['a SASL failure', Object.assign(new Error('bad password'), { name: 'KafkaJSSASLAuthenticationError' }), /SASL/],
    [
      'an untrusted broker certificate',
      wrapped({ name: 'KafkaJSConnectionError', message: 'self-signed', code: 'SELF_SIGNED_CERT_IN_CHAIN' }),
      /TLS refused/,
    ],
    [
      'our certificate refused',
      wrapped({ message: 'alert', code: 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE' }),
      /TLS refused/,
    ],
    ['a misnamed broker', wrapped({ message: 'altname', code: 'ERR_TLS_CERT_ALTNAME_INVALID' }), /TLS refused/],
    ['a refused token', new KafkaAccessDeniedError('OAuth token endpoint answered 401'), /401/],
    [
      'an authorization error',
      Object.assign(new Error('denied'), { type: 'TOPIC_AUTHORIZATION_FAILED' }),
      /refused by the cluster/,
    ],
  ])('names %s', (_, err, reason) => {
    expect(accessDeniedReason(err)).toMatch(reason);
  });

  it.each([
    ['connection refused', wrapped({ name: 'KafkaJSConnectionError', message: 'ECONNREFUSED', code: 'ECONNREFUSED' })],
    ['a timeout', new Error('kafka start check timed out after 10000 ms')],
    ['a plain error', new Error('something else')],
  ])('leaves %s alone (waited out, not fatal)', (_, err) => {
    expect(accessDeniedReason(err)).toBeNull();
  });
});
