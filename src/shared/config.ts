import { availableParallelism, hostname } from 'node:os';
import { z } from 'zod';
import type { KafkaSasl, KafkaSecurity } from './kafka/client-security.js';

// Every environment variable the processes read, with its default. The table in
// docs/configuration.md lists the same names and defaults (test/unit/config-docs.test.ts checks).
/** UPLOAD_BYTES_PER_SECOND's range, also a client's own quota's (admin CLI `client upload-quota`). */
export const uploadQuotaBounds = { min: 1024, max: 1024 * 1024 * 1024 } as const;

const int = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number().int().min(min).max(max).default(def);

const configSchema = z
  .object({
    HOST: z.string().min(1).default('0.0.0.0'),
    PORT: int(8080, 0, 65535),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// connection URL')
      .default('postgres://postgres@127.0.0.1:5432/connect'),
    DATABASE_POOL_MAX: int(10, 1, 1000),
    DATABASE_EDGE_POOL_MAX: int(10, 1, 1000),
    KAFKA_BROKERS: z
      .string()
      .regex(/^[^,\s]+:\d+(,[^,\s]+:\d+)*$/, 'must be host:port[,host:port…]')
      .default('127.0.0.1:9092'),
    KAFKA_CLIENT_ID: z.string().min(1).default('connect-integration'),
    KAFKA_TOPIC_PREFIX: z
      .string()
      .regex(/^[a-zA-Z0-9._-]*$/, 'letters, digits, . _ - only')
      .default('connect.'),
    KAFKA_TOPIC_PARTITIONS: int(6, 1, 1000),
    // -1: the broker's default.replication.factor. 0 for min ISR: the broker's min.insync.replicas.
    KAFKA_TOPIC_REPLICATION_FACTOR: z.coerce.number().int().min(-1).max(32).default(-1),
    KAFKA_TOPIC_MIN_INSYNC_REPLICAS: int(0, 0, 32),
    // false: topics are the platform's; the service checks at start that they exist, creates none.
    KAFKA_MANAGE_TOPICS: z.enum(['true', 'false']).default('true'),
    KAFKA_SECURITY_PROTOCOL: z.enum(['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']).default('PLAINTEXT'),
    KAFKA_SSL_CA_FILE: z.string().default(''),
    KAFKA_SSL_CERT_FILE: z.string().default(''),
    KAFKA_SSL_KEY_FILE: z.string().default(''),
    KAFKA_SSL_KEY_PASSWORD: z.string().default(''),
    KAFKA_SASL_MECHANISM: z.enum(['', 'PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER']).default(''),
    KAFKA_SASL_USERNAME: z.string().default(''),
    KAFKA_SASL_PASSWORD: z.string().default(''),
    KAFKA_SASL_OAUTHBEARER_TOKEN_URL: z.union([z.literal(''), z.string().url()]).default(''),
    KAFKA_SASL_OAUTHBEARER_CLIENT_ID: z.string().default(''),
    KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: z.string().default(''),
    KAFKA_SASL_OAUTHBEARER_SCOPE: z.string().default(''),
    KAFKA_PRODUCE_TIMEOUT_MS: int(10_000, 100, 300_000),
    KAFKA_SESSION_TIMEOUT_MS: int(30_000, 6000, 300_000),
    // 0: max(90 s, 3 × KAFKA_SESSION_TIMEOUT_MS). A healthy consumer fetches every 0.25 s or more often; a rebalance may take up to 60 s.
    KAFKA_CONSUMER_STALL_TIMEOUT_MS: int(0, 0, 3_600_000).refine((v) => v === 0 || v >= 10_000, {
      message: 'must be 0 (the default) or at least 10000',
    }),
    KAFKA_MAX_PENDING_BYTES: int(64 * 1024 * 1024, 1024 * 1024, 4 * 1024 * 1024 * 1024),
    WORKER_APPLY_CONCURRENCY: int(2, 1, 64),
    WORKER_BUFFER_BYTES: int(64 * 1024 * 1024, 1024 * 1024, 4 * 1024 * 1024 * 1024),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    AUTH_CACHE_TTL_MS: int(5000, 0, 300_000),
    AUTH_FAILURES_PER_MINUTE: int(60, 1, 1_000_000),
    TRUSTED_PROXIES: int(0, 0, 10),
    RATE_LIMIT_PER_MINUTE: int(600, 1, 1_000_000),
    RATE_LIMIT_LEASE_MAX: int(50, 1, 10_000),
    BODY_LIMIT_BYTES: int(1024 * 1024, 1024, 100 * 1024 * 1024),
    BODY_READ_TIMEOUT_MS: int(30_000, 100, 600_000),
    UPLOAD_BYTES_PER_SECOND: int(4 * 1024 * 1024, uploadQuotaBounds.min, uploadQuotaBounds.max),
    UPLOAD_BYTES_PER_SECOND_PER_TENANT: int(8 * 1024 * 1024, uploadQuotaBounds.min, uploadQuotaBounds.max),
    IN_FLIGHT_CLIENT_SHARE_PERCENT: int(50, 1, 100),
    IN_FLIGHT_TENANT_SHARE_PERCENT: int(50, 1, 100),
    HEALTH_CHECK_TIMEOUT_MS: int(2000, 100, 60_000),
    SHUTDOWN_TIMEOUT_MS: int(15_000, 100, 600_000),
    INBOUND_BATCH_MAX_TARGETS: int(10_000, 1, 1_000_000),
    INBOUND_BATCH_MAX_BYTES: int(16 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    INBOUND_CHUNK_MAX_BYTES: int(512 * 1024, 4096, 3 * 1024 * 1024),
    INBOUND_MAX_IN_FLIGHT: int(16, 1, 10_000),
    INBOUND_EXPRESS_MAX_TARGETS: int(100, 0, 1_000_000),
    // At least 2: with one, a 16 MiB batch holds every other client's batch behind it (and on 2
    // cores a second thread took A from 125-131k to 134-150k targets/s, p99 from 151-191 to 47-68 ms).
    INBOUND_PARSE_THREADS: int(Math.max(2, availableParallelism() - 1), 1, 64),
    IMPORT_JOBS_MAX_TAKE: int(200, 1, 10_000),
    ORPHAN_GRACE_MS: int(30_000, 0, 3_600_000),
    ROUTE_SUGGESTION_MAX_IN_FLIGHT: int(2, 1, 64),
    ROUTE_SUGGESTION_BUDGET_MS: int(30_000, 1, 600_000),
    // auto: the container's memory limit (cgroup), off where none is set; off; or bytes (at least 256 MiB).
    GATEWAY_MEMORY_BUDGET_BYTES: z
      .union([
        z.enum(['auto', 'off']),
        z.coerce
          .number()
          .int()
          .min(256 * 1024 * 1024)
          .max(1024 * 1024 * 1024 * 1024),
      ])
      .default('auto'),
    // PKCS#8 PEM (EC P-256 or Ed25519; literal \n accepted); only its public half is stored in PostgreSQL.
    OAUTH_SIGNING_KEY: z.string().default(''),
    OAUTH_ISSUER: z.string().min(1).max(500).default('urn:connect-integration'),
    OAUTH_AUDIENCE: z.string().min(1).max(500).default('connect/v1'),
    OAUTH_TOKEN_TTL_SECONDS: int(600, 60, 86_400),
    // base64 of 32 random bytes: encrypts (AES-256-GCM) the generated signing key stored in PostgreSQL.
    // Checked by the gateway (never echoed); empty: each replica signs with a key of its own, in memory only.
    OAUTH_KEY_ENCRYPTION_KEY: z.string().default(''),
    // Comma-separated retired encryption keys: stored keys encrypted with one are re-encrypted on start.
    OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS: z.string().default(''),
    OAUTH_TOKEN_CLIENT_LIMIT_PER_MINUTE: int(30, 1, 1_000_000),
    OAUTH_TOKEN_ADDRESS_LIMIT_PER_MINUTE: int(300, 1, 1_000_000),
    WEBHOOK_TIMEOUT_MS: int(10_000, 100, 120_000),
    WEBHOOK_RETRY_SCHEDULE: z
      .string()
      .regex(/^\s*\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?)*\s*$/, 'comma-separated delays in seconds, e.g. 5,300,1800')
      .default('5,300,1800,7200,18000,36000,36000'),
    WEBHOOK_POLL_INTERVAL_MS: int(1000, 10, 60_000),
    WEBHOOK_CONCURRENCY: int(16, 1, 1000),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: z.enum(['true', 'false']).default('false'),
    // Self-service (issue 26): endpoints a client may register through the API; the event feed.
    WEBHOOK_ENDPOINTS_PER_CLIENT: int(20, 1, 1000),
    EVENT_RETENTION_HOURS: int(336, 1, 87_600),
    EVENT_PRUNE_INTERVAL_MS: int(60_000, 100, 86_400_000),
    EVENT_FEED_MAX_WAIT_SECONDS: int(30, 1, 300),
    EVENT_FEED_WAITERS_PER_CLIENT: int(4, 1, 10_000),
    EVENT_FEED_WAITERS_PER_TENANT: int(16, 1, 100_000),
    EVENT_FEED_WAITERS_MAX: int(1000, 1, 100_000),
    WORKERS: z
      .string()
      .regex(/^[a-z0-9_,\s-]*$/, 'comma-separated worker kind names')
      .default(''),
    WORKER_HEARTBEAT_FILE: z.string().default(''),
    // A worker's /metrics, /livez and /readyz (0: any free port, printed at start).
    WORKER_HTTP_HOST: z.string().min(1).default('0.0.0.0'),
    WORKER_HTTP_PORT: int(9464, 0, 65535),
    // Names the worker process in the ledgers of what it applied (admin CLI `trace`); '': host:pid.
    WORKER_ID: z.string().max(200).default(''),
  })
  .superRefine((c, ctx) => {
    const problem = kafkaSecurityProblem(c);
    if (problem) ctx.addIssue({ code: 'custom', path: [problem.variable], message: problem.message });
  })
  .refine((c) => c.ORPHAN_GRACE_MS > c.KAFKA_PRODUCE_TIMEOUT_MS, {
    // A gateway commits its edge row only after Kafka acked, which may take up to the produce
    // timeout: a shorter grace would let workers skip messages of rows that do commit.
    message: 'must be greater than KAFKA_PRODUCE_TIMEOUT_MS',
    path: ['ORPHAN_GRACE_MS'],
  });

export type Config = {
  host: string;
  port: number;
  databaseUrl: string;
  databasePoolMax: number;
  /** Gateway connections that may wait for Kafka inside an edge transaction (apart from databasePoolMax). */
  databaseEdgePoolMax: number;
  kafkaBrokers: string[];
  kafkaClientId: string;
  kafkaTopicPrefix: string;
  kafkaTopicPartitions: number;
  /** Replication factor of the topics the service creates (-1: the broker's default). */
  kafkaTopicReplicationFactor: number;
  /** min.insync.replicas of the topics the service creates (0: the broker's default). */
  kafkaTopicMinInsyncReplicas: number;
  /** False: the topics are managed elsewhere; the service only checks that they exist. */
  kafkaManageTopics: boolean;
  /** TLS and SASL towards the brokers. */
  kafkaSecurity: KafkaSecurity;
  kafkaProduceTimeoutMs: number;
  /** A consumer silent this long leaves its group; its partitions go to the others. */
  kafkaSessionTimeoutMs: number;
  /** A worker's consumer silent this long with no batch in hand is replaced by a fresh one (0: the default). */
  kafkaConsumerStallTimeoutMs: number;
  /** Bytes of produce calls not yet settled that a process holds at most (503 beyond). */
  kafkaMaxPendingBytes: number;
  /** Messages one worker process applies at once, per kind (plus one slot kept for the express lane). */
  workerApplyConcurrency: number;
  /** Bytes of fetched, unapplied messages one worker process holds per kind; a partition over its share is paused. */
  workerBufferBytes: number;
  logLevel: z.infer<typeof configSchema>['LOG_LEVEL'];
  authCacheTtlMs: number;
  /** Refused credentials per client address and minute before they are answered 429 (valid ones never are). */
  authFailuresPerMinute: number;
  /**
   * Proxies in front of the gateway that each append the address they saw to X-Forwarded-For: the
   * client address is the entry this many from the right. 0: the header is ignored (the TCP peer).
   */
  trustedProxies: number;
  rateLimitPerMinute: number;
  /** Most points of a client's window a gateway replica leases from PostgreSQL at once. */
  rateLimitLeaseMax: number;
  bodyLimitBytes: number;
  /** A request body must arrive within this (408 beyond). */
  bodyReadTimeoutMs: number;
  /** Body bytes per second one client may send to one gateway replica (rate-limit/upload-quota.ts). */
  uploadBytesPerSecond: number;
  /** The same for all of one tenant's clients together. */
  uploadBytesPerSecondPerTenant: number;
  /** Share of an operation's in-flight slots one Integration Client may hold. */
  inFlightClientSharePercent: number;
  /** The same for all of one tenant's Integration Clients together. */
  inFlightTenantSharePercent: number;
  healthCheckTimeoutMs: number;
  shutdownTimeoutMs: number;
  inboundBatchMaxTargets: number;
  inboundBatchMaxBytes: number;
  /** Targets are cut into Kafka messages of at most this many bytes. */
  inboundChunkMaxBytes: number;
  inboundMaxInFlight: number;
  /** Imports of at most this many accepted targets (in one chunk) take the express lane (0: none do). */
  inboundExpressMaxTargets: number;
  /** Worker threads that parse and validate large inbound batches off the event loop. */
  inboundParseThreads: number;
  importJobsMaxTake: number;
  /** How long a worker waits for the edge record a message names before dropping it as an orphan. */
  orphanGraceMs: number;
  /** Route suggestion drafts one gateway computes at once (worker threads). */
  routeSuggestionMaxInFlight: number;
  /** Wall-clock budget of one draft's computation (422 beyond; the computation is stopped). */
  routeSuggestionBudgetMs: number;
  /** Resident bytes the gateway keeps under by refusing work (gateway/memory/); auto: the container's limit. */
  gatewayMemoryBudget: number | 'auto' | 'off';
  /** PEM of the access-token signing key, or '' (then generated: see oauthKeyEncryptionKey). */
  oauthSigningKey: string;
  /** iss of access tokens, checked on /connect/v1. */
  oauthIssuer: string;
  /** aud of access tokens, checked on /connect/v1. */
  oauthAudience: string;
  oauthTokenTtlSeconds: number;
  /** base64 key (32 bytes) that encrypts the stored signing key, or '' (per-replica keys, nothing secret stored). */
  oauthKeyEncryptionKey: string;
  /** Retired encryption keys (base64, comma-separated), only to decrypt and re-encrypt what they encrypted. */
  oauthKeyEncryptionKeysPrevious: string;
  /** Token endpoint: requests per minute per authenticated client, per gateway replica (429 slow_down beyond). */
  oauthTokenClientLimitPerMinute: number;
  /** Token endpoint: unauthenticated requests per minute per client address and replica (429 slow_down beyond). */
  oauthTokenAddressLimitPerMinute: number;
  /** Per-attempt timeout of a webhook POST (connect, response and body). */
  webhookTimeoutMs: number;
  /** Delays in ms before the 2nd, 3rd, … attempt (±20% jitter); after the last, the delivery gives up. */
  webhookRetryScheduleMs: number[];
  webhookPollIntervalMs: number;
  /** Webhook attempts one dispatcher process makes at once. */
  webhookConcurrency: number;
  /** Allow endpoints on loopback, private, link-local … addresses (development, tests). */
  webhookAllowPrivateTargets: boolean;
  /** Endpoints one client may register through the API (409 beyond). */
  webhookEndpointsPerClient: number;
  /** Events (with their deliveries and attempts) older than this are pruned by the dispatcher. */
  eventRetentionMs: number;
  eventPruneIntervalMs: number;
  /** Longest `wait` of GET /api/v1/events. */
  eventFeedMaxWaitSeconds: number;
  /** Long-polls one client, one tenant and all clients may have waiting on one gateway (429 beyond). */
  eventFeedWaitersPerClient: number;
  eventFeedWaitersPerTenant: number;
  eventFeedWaitersMax: number;
  workers: string[];
  /** Touched every 10 s by the worker runner when set (container liveness). */
  workerHeartbeatFile: string;
  /** Listen address of a worker process's /metrics, /livez and /readyz. */
  workerHttpHost: string;
  /** Their port (0: any free port; the runner prints the URL). */
  workerHttpPort: number;
  /** WORKER_ID, else host:pid: who applied a message, in the ledgers (admin CLI `trace`). */
  workerId: string;
};

export class ConfigError extends Error {}

type KafkaSecurityEnv = Pick<
  z.infer<typeof configSchema>,
  | Extract<keyof z.infer<typeof configSchema>, `KAFKA_S${string}`>
  | 'KAFKA_TOPIC_REPLICATION_FACTOR'
  | 'KAFKA_TOPIC_MIN_INSYNC_REPLICAS'
>;

/** The first inconsistency among the Kafka security and topic settings, if any. */
function kafkaSecurityProblem(c: KafkaSecurityEnv): { variable: string; message: string } | null {
  const sasl = c.KAFKA_SECURITY_PROTOCOL.startsWith('SASL_');
  const tls = c.KAFKA_SECURITY_PROTOCOL.endsWith('SSL');
  if (sasl && !c.KAFKA_SASL_MECHANISM)
    return {
      variable: 'KAFKA_SASL_MECHANISM',
      message: `is required with KAFKA_SECURITY_PROTOCOL=${c.KAFKA_SECURITY_PROTOCOL}`,
    };
  if (!sasl && c.KAFKA_SASL_MECHANISM)
    return { variable: 'KAFKA_SASL_MECHANISM', message: 'needs KAFKA_SECURITY_PROTOCOL=SASL_SSL (or SASL_PLAINTEXT)' };
  if (['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'].includes(c.KAFKA_SASL_MECHANISM)) {
    if (!c.KAFKA_SASL_USERNAME)
      return { variable: 'KAFKA_SASL_USERNAME', message: `is required with ${c.KAFKA_SASL_MECHANISM}` };
    if (!c.KAFKA_SASL_PASSWORD)
      return { variable: 'KAFKA_SASL_PASSWORD', message: `is required with ${c.KAFKA_SASL_MECHANISM}` };
  }
  if (c.KAFKA_SASL_MECHANISM === 'OAUTHBEARER') {
    for (const v of [
      'KAFKA_SASL_OAUTHBEARER_TOKEN_URL',
      'KAFKA_SASL_OAUTHBEARER_CLIENT_ID',
      'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET',
    ] as const)
      if (!c[v]) return { variable: v, message: 'is required with KAFKA_SASL_MECHANISM=OAUTHBEARER' };
  }
  for (const v of ['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE'] as const)
    if (c[v] && !tls) return { variable: v, message: 'needs KAFKA_SECURITY_PROTOCOL=SSL or SASL_SSL' };
  if (Boolean(c.KAFKA_SSL_CERT_FILE) !== Boolean(c.KAFKA_SSL_KEY_FILE))
    return {
      variable: c.KAFKA_SSL_CERT_FILE ? 'KAFKA_SSL_KEY_FILE' : 'KAFKA_SSL_CERT_FILE',
      message: 'client certificate and key go together',
    };
  if (
    c.KAFKA_TOPIC_MIN_INSYNC_REPLICAS > 0 &&
    c.KAFKA_TOPIC_REPLICATION_FACTOR > 0 &&
    c.KAFKA_TOPIC_MIN_INSYNC_REPLICAS > c.KAFKA_TOPIC_REPLICATION_FACTOR
  )
    return { variable: 'KAFKA_TOPIC_MIN_INSYNC_REPLICAS', message: 'cannot exceed KAFKA_TOPIC_REPLICATION_FACTOR' };
  return null;
}

function kafkaSecurityOf(c: KafkaSecurityEnv): KafkaSecurity {
  const optional = (v: string) => v || undefined;
  let sasl: KafkaSasl | undefined;
  if (c.KAFKA_SASL_MECHANISM === 'OAUTHBEARER')
    sasl = {
      mechanism: 'OAUTHBEARER',
      tokenUrl: c.KAFKA_SASL_OAUTHBEARER_TOKEN_URL,
      clientId: c.KAFKA_SASL_OAUTHBEARER_CLIENT_ID,
      clientSecret: c.KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET,
      scope: optional(c.KAFKA_SASL_OAUTHBEARER_SCOPE),
    };
  else if (c.KAFKA_SASL_MECHANISM)
    sasl = { mechanism: c.KAFKA_SASL_MECHANISM, username: c.KAFKA_SASL_USERNAME, password: c.KAFKA_SASL_PASSWORD };
  return {
    protocol: c.KAFKA_SECURITY_PROTOCOL,
    caFile: optional(c.KAFKA_SSL_CA_FILE),
    certFile: optional(c.KAFKA_SSL_CERT_FILE),
    keyFile: optional(c.KAFKA_SSL_KEY_FILE),
    keyPassword: optional(c.KAFKA_SSL_KEY_PASSWORD),
    sasl,
  };
}

/** Parses the environment; throws ConfigError with one line naming the first bad variable. */
/** Each variable's default as the schema has it, by name ('' where it has none or computes it). */
export function configDefaults(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(configSchema.shape).map(([name, schema]) => {
      const parsed = (schema as z.ZodType).safeParse(undefined);
      return [name, parsed.success && parsed.data !== undefined ? String(parsed.data) : ''];
    }),
  );
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable counts as unset, as shells and compose files often export "".
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? 'environment');
    throw new ConfigError(`invalid configuration: ${name}=${JSON.stringify(env[name] ?? '')}: ${issue.message}`);
  }
  const c = parsed.data;
  return {
    host: c.HOST,
    port: c.PORT,
    databaseUrl: c.DATABASE_URL,
    databasePoolMax: c.DATABASE_POOL_MAX,
    databaseEdgePoolMax: c.DATABASE_EDGE_POOL_MAX,
    kafkaBrokers: c.KAFKA_BROKERS.split(','),
    kafkaClientId: c.KAFKA_CLIENT_ID,
    kafkaTopicPrefix: c.KAFKA_TOPIC_PREFIX,
    kafkaTopicPartitions: c.KAFKA_TOPIC_PARTITIONS,
    kafkaTopicReplicationFactor: c.KAFKA_TOPIC_REPLICATION_FACTOR,
    kafkaTopicMinInsyncReplicas: c.KAFKA_TOPIC_MIN_INSYNC_REPLICAS,
    kafkaManageTopics: c.KAFKA_MANAGE_TOPICS === 'true',
    kafkaSecurity: kafkaSecurityOf(c),
    kafkaProduceTimeoutMs: c.KAFKA_PRODUCE_TIMEOUT_MS,
    kafkaSessionTimeoutMs: c.KAFKA_SESSION_TIMEOUT_MS,
    kafkaConsumerStallTimeoutMs: c.KAFKA_CONSUMER_STALL_TIMEOUT_MS,
    kafkaMaxPendingBytes: c.KAFKA_MAX_PENDING_BYTES,
    workerApplyConcurrency: c.WORKER_APPLY_CONCURRENCY,
    workerBufferBytes: c.WORKER_BUFFER_BYTES,
    logLevel: c.LOG_LEVEL,
    authCacheTtlMs: c.AUTH_CACHE_TTL_MS,
    authFailuresPerMinute: c.AUTH_FAILURES_PER_MINUTE,
    trustedProxies: c.TRUSTED_PROXIES,
    rateLimitPerMinute: c.RATE_LIMIT_PER_MINUTE,
    rateLimitLeaseMax: c.RATE_LIMIT_LEASE_MAX,
    bodyLimitBytes: c.BODY_LIMIT_BYTES,
    bodyReadTimeoutMs: c.BODY_READ_TIMEOUT_MS,
    uploadBytesPerSecond: c.UPLOAD_BYTES_PER_SECOND,
    uploadBytesPerSecondPerTenant: c.UPLOAD_BYTES_PER_SECOND_PER_TENANT,
    inFlightClientSharePercent: c.IN_FLIGHT_CLIENT_SHARE_PERCENT,
    inFlightTenantSharePercent: c.IN_FLIGHT_TENANT_SHARE_PERCENT,
    healthCheckTimeoutMs: c.HEALTH_CHECK_TIMEOUT_MS,
    shutdownTimeoutMs: c.SHUTDOWN_TIMEOUT_MS,
    inboundBatchMaxTargets: c.INBOUND_BATCH_MAX_TARGETS,
    inboundBatchMaxBytes: c.INBOUND_BATCH_MAX_BYTES,
    inboundChunkMaxBytes: c.INBOUND_CHUNK_MAX_BYTES,
    inboundMaxInFlight: c.INBOUND_MAX_IN_FLIGHT,
    inboundExpressMaxTargets: c.INBOUND_EXPRESS_MAX_TARGETS,
    inboundParseThreads: c.INBOUND_PARSE_THREADS,
    importJobsMaxTake: c.IMPORT_JOBS_MAX_TAKE,
    orphanGraceMs: c.ORPHAN_GRACE_MS,
    routeSuggestionMaxInFlight: c.ROUTE_SUGGESTION_MAX_IN_FLIGHT,
    routeSuggestionBudgetMs: c.ROUTE_SUGGESTION_BUDGET_MS,
    gatewayMemoryBudget: c.GATEWAY_MEMORY_BUDGET_BYTES,
    oauthSigningKey: c.OAUTH_SIGNING_KEY,
    oauthIssuer: c.OAUTH_ISSUER,
    oauthAudience: c.OAUTH_AUDIENCE,
    oauthTokenTtlSeconds: c.OAUTH_TOKEN_TTL_SECONDS,
    oauthKeyEncryptionKey: c.OAUTH_KEY_ENCRYPTION_KEY,
    oauthKeyEncryptionKeysPrevious: c.OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS,
    oauthTokenClientLimitPerMinute: c.OAUTH_TOKEN_CLIENT_LIMIT_PER_MINUTE,
    oauthTokenAddressLimitPerMinute: c.OAUTH_TOKEN_ADDRESS_LIMIT_PER_MINUTE,
    webhookTimeoutMs: c.WEBHOOK_TIMEOUT_MS,
    webhookRetryScheduleMs: c.WEBHOOK_RETRY_SCHEDULE.split(',').map((v) => Math.round(Number(v) * 1000)),
    webhookPollIntervalMs: c.WEBHOOK_POLL_INTERVAL_MS,
    webhookConcurrency: c.WEBHOOK_CONCURRENCY,
    webhookAllowPrivateTargets: c.WEBHOOK_ALLOW_PRIVATE_TARGETS === 'true',
    webhookEndpointsPerClient: c.WEBHOOK_ENDPOINTS_PER_CLIENT,
    eventRetentionMs: c.EVENT_RETENTION_HOURS * 3_600_000,
    eventPruneIntervalMs: c.EVENT_PRUNE_INTERVAL_MS,
    eventFeedMaxWaitSeconds: c.EVENT_FEED_MAX_WAIT_SECONDS,
    eventFeedWaitersPerClient: c.EVENT_FEED_WAITERS_PER_CLIENT,
    eventFeedWaitersPerTenant: c.EVENT_FEED_WAITERS_PER_TENANT,
    eventFeedWaitersMax: c.EVENT_FEED_WAITERS_MAX,
    workers: c.WORKERS.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    workerHeartbeatFile: c.WORKER_HEARTBEAT_FILE,
    workerHttpHost: c.WORKER_HTTP_HOST,
    workerHttpPort: c.WORKER_HTTP_PORT,
    workerId: c.WORKER_ID.trim() || `${hostname()}:${process.pid}`,
  };
}

/** For entry points: load or print the one-line reason and exit 78 (EX_CONFIG). */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
}
