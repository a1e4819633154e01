import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A three-node cluster of scripts/kafka-cluster on ports of its own and a state dir of its own
 * (certificates, SCRAM users), for tests; `settings` are the lines of its client.env.
 */
export async function startThrowawayCluster() {
  // Below the kernel's ephemeral range (32768+), where a port taken by an outgoing connection
  // would fail a listener; a base taken by another test is retried with another.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOn(20000 + Math.floor(Math.random() * 1200) * 10);
    } catch (err) {
      if (attempt >= 3 || !/is in use|Unable to start acceptor|Address already in use/.test(String(err))) throw err;
    }
  }
}

async function startOn(base: number) {
  const stateDir = await mkdtemp(join(tmpdir(), 'connect-kafka-cluster-'));
  // A node recovering its logs after a SIGKILL on a loaded machine may take minutes.
  const env = {
    ...process.env,
    KAFKA_CLUSTER_BASE_PORT: String(base),
    STATE_DIR: stateDir,
    KAFKA_START_TIMEOUT: '400',
  };
  const cluster = (...args: string[]) => run('scripts/kafka-cluster', args, { env, timeout: 600_000 });
  try {
    await cluster('up');
  } catch (err) {
    await cluster('down').catch(() => undefined);
    await rm(stateDir, { recursive: true, force: true });
    throw err;
  }
  const text = await readFile(join(stateDir, `kafka-cluster-${base}`, 'client.env'), 'utf8');
  const settings = Object.fromEntries(
    text
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  ) as Record<string, string>;
  return {
    settings,
    /** Brokers without TLS or SASL, for the test's own checks. */
    plaintextBrokers: settings.PLAINTEXT_BROKERS!,
    /** The service's environment to reach the cluster over SASL_SSL with SCRAM-SHA-512. */
    scramEnv: {
      KAFKA_BROKERS: settings.KAFKA_BROKERS!,
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: settings.KAFKA_SASL_USERNAME!,
      KAFKA_SASL_PASSWORD: settings.KAFKA_SASL_PASSWORD!,
      KAFKA_SSL_CA_FILE: settings.KAFKA_SSL_CA_FILE!,
    },
    /** ... and over mutual TLS with the client certificate. */
    mtlsEnv: {
      KAFKA_BROKERS: settings.MTLS_BROKERS!,
      KAFKA_SECURITY_PROTOCOL: 'SSL',
      KAFKA_SASL_MECHANISM: '',
      KAFKA_SASL_USERNAME: '',
      KAFKA_SASL_PASSWORD: '',
      KAFKA_SSL_CA_FILE: settings.KAFKA_SSL_CA_FILE!,
      KAFKA_SSL_CERT_FILE: settings.KAFKA_SSL_CERT_FILE_FOR_MTLS!,
      KAFKA_SSL_KEY_FILE: settings.KAFKA_SSL_KEY_FILE_FOR_MTLS!,
    },
    /** Node n's plaintext port (1-3). */
    plaintextPort: (node: number) => base + 10 * (node - 1),
    kill: (node: number) => cluster('kill', String(node)),
    start: (node: number) => cluster('start', String(node)),
    stop: (node: number) => cluster('stop', String(node)),
    async destroy() {
      await cluster('down').catch(() => undefined);
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

export type ThrowawayCluster = Awaited<ReturnType<typeof startThrowawayCluster>>;
