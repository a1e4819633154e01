import { availableParallelism, hostname } from 'node:os';
import { z } from 'zod';
import { kafkaSecuritySettings } from './config-kafka-security.js';
import { count, decimal, env, flag, int, oneOf, section, settingsOf, text } from './config-setting.js';

// Every environment variable the processes read, declared once: its variable, schema (default,
// bounds), field and description. The Config type is inferred from it, and the reference in
// docs/configuration.md is generated from it (scripts/config-doc.ts). Each section is
// what one part of the code is handed.

/** UPLOAD_BYTES_PER_SECOND's range, also a client's own quota's (admin CLI `client upload-quota`). */
export const uploadQuotaBounds = { min: 1024, max: 1024 * 1024 * 1024 } as const;

const MiB = 1024 * 1024;
const quota = (def: number) => int(def, uploadQuotaBounds.min, uploadQuotaBounds.max);
// Derived values, each computed here once.
const list = (value: string) =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const secondsToMs = (value: string) => value.split(',').map((s) => Math.round(Number(s) * 1000));
const hoursToMs = (hours: number) => Math.round(hours * 3_600_000);
const daysToMs = (days: number) => Math.round(days * 86_400_000);
// Retention periods take decimals (a soak runs with minutes: bench:soak), down to about a minute.
const minuteInDays = 0.00069; // 0.99 minutes: 1/1440 written with 5 or more decimals passes
const minuteInHours = 0.0166; // 0.996 minutes: 1/60 written with 4 or more decimals passes
const orHostAndPid = (id: string) => id.trim() || `${hostname()}:${process.pid}`;

const postgresDefault = 'postgres://postgres@127.0.0.1:5432/connect';
const stallTimeout = int(0, 0, 3_600_000).refine((v) => v === 0 || v >= 10_000, {
  message: 'must be 0 (the default) or at least 10000',
});
const memoryBudget = z.union([z.enum(['auto', 'off']), count(256 * MiB, 1024 * 1024 * MiB)]).default('auto');
const retrySchedule = text(
  '5,300,1800,7200,18000,36000,36000',
  /^\s*\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?)*\s*$/,
  'comma-separated delays in seconds, e.g. 5,300,1800',
);

const service = section('every process', {
  logLevel: env('LOG_LEVEL', oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info')).describe(
    'least severe log lines written',
  ),
  healthCheckTimeoutMs: env('HEALTH_CHECK_TIMEOUT_MS', int(2000, 100, 60_000)).describe(
    'per-dependency probe timeout of `/readyz` and the health endpoint',
  ),
  shutdownTimeoutMs: env('SHUTDOWN_TIMEOUT_MS', int(15_000, 100, 600_000)).describe(
    'a process that has not stopped this long after SIGTERM exits 1',
  ),
});

const http = section("the gateway's HTTP server", {
  host: env('HOST', text('0.0.0.0')).describe('gateway listen address'),
  port: env('PORT', int(8080, 0, 65535)).describe('gateway port (`0`: any free port)'),
  trustedProxies: env('TRUSTED_PROXIES', int(0, 0, 10)).describe(
    "number of proxies (load balancers) in front of the gateway that each append the address they saw to `X-Forwarded-For`; the client address is the entry this many from the right (entries further left are the client's say). `0`: the header is ignored, the client address is the TCP peer. Set it only when clients cannot reach the gateway but through those proxies",
  ),
  bodyLimitBytes: env('BODY_LIMIT_BYTES', int(MiB, 1024, 100 * MiB)).describe(
    'largest request body (413 beyond), except the inbound batch',
  ),
  bodyReadTimeoutMs: env('BODY_READ_TIMEOUT_MS', int(30_000, 100, 600_000)).describe(
    'a request body must arrive within this; slower senders are cut with 408 `request_timeout` (a slow sender never holds an in-flight slot meanwhile)',
  ),
});

const database = section('PostgreSQL', {
  url: env(
    'DATABASE_URL',
    text(postgresDefault, /^postgres(ql)?:\/\//, 'must be a postgres:// connection URL'),
  ).describe('PostgreSQL; the database is created if missing'),
  poolMax: env('DATABASE_POOL_MAX', int(10, 1, 1000)).describe(
    "connections per process (the gateway's reads, authentication, rate limits, health and short writes; a worker's applies)",
  ),
  edgePoolMax: env('DATABASE_EDGE_POOL_MAX', int(10, 1, 1000)).describe(
    "gateway only: connections of edge transactions, which wait for Kafka's acknowledgement; a separate budget so waiting writes never starve reads",
  ),
  tenantSharePercent: env('DATABASE_TENANT_SHARE_PERCENT', int(25, 1, 100)).describe(
    "gateway only: the most of the read pool's connections (`DATABASE_POOL_MAX` less a quarter: the tenants' reads and short writes) one tenant's requests hold at once (at least one); beyond, they wait in the tenant's own queue, and a connection that comes free goes to the waiting tenant holding the fewest, so one tenant's load never keeps another's request waiting for a connection. Small, because a read's cost grows with the tenant's history and a connection's share is a share of PostgreSQL's cores: at 25 % another tenant's p99 stayed within 2.4× of quiet beside 40 connections of one client's deepest reads, at 50 % within 7× ([operations.md](operations.md#database-shares))",
  ),
  edgeTenantSharePercent: env('DATABASE_EDGE_TENANT_SHARE_PERCENT', int(50, 1, 100)).describe(
    "gateway only: the same for the edge pool (`DATABASE_EDGE_POOL_MAX`): the writes that wait for Kafka's acknowledgement, whose statements read by key; larger than the read share, so one tenant's writes keep their throughput",
  ),
  tenantQueue: env('DATABASE_TENANT_QUEUE', int(256, 0, 10_000)).describe(
    "gateway only: requests of one tenant waiting for a connection past its share, per pool and replica; beyond, and after waiting 5 s, 429 `database_share_exceeded` + `Retry-After`. Generous, because a place in it costs little (the request's body is already held, within the memory budget) and a burst of one client's retries (50 identical requests at once) should wait its turn rather than be refused; it bounds how many requests one tenant parks on a replica",
  ),
  statementTimeoutMs: env('DATABASE_STATEMENT_TIMEOUT_MS', int(3000, 100, 600_000)).describe(
    "gateway only: PostgreSQL's `statement_timeout` on the connections of requests' reads and short writes: a statement that runs longer is cancelled and answered 503 `service_busy` + `Retry-After`, instead of holding a connection; below the 5 s a request waits for one, and well above what a request's statement takes on a full database (docs/benchmarks.md, bench:reads)",
  ),
  queryTimeoutMs: env('DATABASE_QUERY_TIMEOUT_MS', int(10_000, 1000, 3_600_000)).describe(
    "how long a gateway or worker waits for PostgreSQL's answer to one statement (`COMMIT` included) before it gives that connection up: the gateway answers 503 + `Retry-After`, a worker waits and applies again (never dead-letters). Bounds a commit waiting for a synchronous standby that is gone and a server that vanished without closing its connections; must exceed the slowest statement a loaded server takes (a worker's chunk apply)",
  ),
});

const kafka = section('brokers, topics and clients (TLS and SASL: [operations.md](operations.md))', {
  brokers: env(
    'KAFKA_BROKERS',
    text('127.0.0.1:9092', /^[^,\s]+:\d+(,[^,\s]+:\d+)*$/, 'must be host:port[,host:port…]').transform(list),
  ).describe('bootstrap brokers, `host:port[,host:port…]`'),
  clientId: env('KAFKA_CLIENT_ID', text('connect-integration')).describe('Kafka client id prefix'),
  topicPrefix: env('KAFKA_TOPIC_PREFIX', text('connect.', /^[a-zA-Z0-9._-]*$/, 'letters, digits, . _ - only')).describe(
    'prefix of every topic and consumer group (tests isolate themselves with it)',
  ),
  topicPartitions: env('KAFKA_TOPIC_PARTITIONS', int(6, 1, 1000)).describe(
    'partitions of topics the service creates: the most workers of one kind that share work',
  ),
  topicReplicationFactor: env('KAFKA_TOPIC_REPLICATION_FACTOR', int(-1, -1, 32)).describe(
    "replication factor of the topics the service creates (their `.dlq` topics alike); `-1`: the broker's `default.replication.factor`. Use `3` on a cluster",
  ),
  topicMinInsyncReplicas: env('KAFKA_TOPIC_MIN_INSYNC_REPLICAS', int(0, 0, 32)).describe(
    "`min.insync.replicas` of those topics (`0`: the broker's default). With acks=all a write is acknowledged only once this many replicas hold it; use `2` with replication 3",
  ),
  manageTopics: env('KAFKA_MANAGE_TOPICS', flag('true')).describe(
    '`false`: the topics belong to the platform (Strimzi `KafkaTopic`, Terraform, MSK/Confluent consoles): the service creates none and checks at start that every one it needs exists with at least `KAFKA_TOPIC_PARTITIONS` partitions, else it stops with one line naming each (the list: [operations.md](operations.md#running-on-your-kafka-and-postgresql))',
  ),
  security: kafkaSecuritySettings,
  produceTimeoutMs: env('KAFKA_PRODUCE_TIMEOUT_MS', int(10_000, 100, 300_000)).describe(
    'how long a produce waits for acks=all before the request answers 503',
  ),
  sessionTimeoutMs: env('KAFKA_SESSION_TIMEOUT_MS', int(30_000, 6000, 300_000)).describe(
    'a worker silent this long leaves its consumer group and its partitions move to the others',
  ),
  // A healthy consumer fetches every 0.25 s or more often; a rebalance may take up to 60 s.
  consumerStallTimeoutMs: env('KAFKA_CONSUMER_STALL_TIMEOUT_MS', stallTimeout).describe(
    "a worker's consumer that shows no sign of life this long (no fetch, heartbeat or group join) is replaced by a fresh one, as after a crash (a guard against kafkajs consumers that silently stop, kafkajs issue #659). `0`: max(90000, 3 × `KAFKA_SESSION_TIMEOUT_MS`); otherwise at least 10000. Below 60000 a slow rebalance may be taken for a stall",
  ),
  maxPendingBytes: env('KAFKA_MAX_PENDING_BYTES', int(64 * MiB, MiB, 4096 * MiB)).describe(
    'bytes of Kafka sends not yet settled one process holds; beyond, writes answer 503 at once (a timed-out send keeps retrying inside the client, so this bounds memory while Kafka is slow)',
  ),
}).refine((c) => c.topicReplicationFactor <= 0 || c.topicMinInsyncReplicas <= c.topicReplicationFactor, {
  path: ['topicMinInsyncReplicas'],
  message: 'cannot exceed KAFKA_TOPIC_REPLICATION_FACTOR',
});

const auth = section('API key authentication', {
  cacheTtlMs: env('AUTH_CACHE_TTL_MS', int(5000, 0, 300_000)).describe(
    'how long a key lookup is cached: a revoked key stops working within this time',
  ),
  failuresPerMinute: env('AUTH_FAILURES_PER_MINUTE', int(60, 1, 1_000_000)).describe(
    "refused API keys (unknown, revoked, expired) one client address (IPv6: its /64) may send per minute, per gateway replica; beyond, that address's refused keys are answered 429 `rate_limited` with `Retry-After`. Valid keys are never refused by it (see [operations.md](operations.md#throttling))",
  ),
});

const limits = section("the gateway's limits: rates, upload quotas, in-flight shares, memory", {
  rateLimitPerMinute: env('RATE_LIMIT_PER_MINUTE', int(600, 1, 1_000_000)).describe(
    'default requests per minute per Integration Client (per-client override: admin CLI)',
  ),
  rateLimitLeaseMax: env('RATE_LIMIT_LEASE_MAX', int(50, 1, 10_000)).describe(
    "most points of a client's window a gateway replica takes from PostgreSQL at once (a lease is a twentieth of the limit, at least 1, at most this); `1` writes the shared counter on every request (exact to the request across replicas, a database write each)",
  ),
  uploadBytesPerSecond: env('UPLOAD_BYTES_PER_SECOND', quota(4 * MiB)).describe(
    'default upload quota (per-client override: admin CLI `client upload-quota`): request body bytes per second one Integration Client (an address, unauthenticated) may send to all gateway replicas together (leased from PostgreSQL, see "Upload quota" in [api-guide.md](api-guide.md#the-interface-in-short)), counted in windows of whole seconds that hold the largest body (`INBOUND_BATCH_MAX_BYTES`: 4 s and 16 MiB at the defaults); a body that does not fit is answered 429 `upload_quota_exceeded` + `Retry-After`, unread. Raise it with more replicas or cores (`npm run bench:noisy` measures what one client at its quota does to the others)',
  ),
  uploadBytesPerSecondPerTenant: env('UPLOAD_BYTES_PER_SECOND_PER_TENANT', quota(8 * MiB)).describe(
    "the same for all of one tenant's Integration Clients together (each client is also held to its own); a body that does not fit is answered 429 `upload_quota_exceeded` with `details.quota` `tenant`. A client an operator gave a quota of its own above this (`client upload-quota`) is held to its own alone and spends none of the tenant's; raise both defaults together",
  ),
  inFlightClientSharePercent: env('IN_FLIGHT_CLIENT_SHARE_PERCENT', int(50, 1, 100)).describe(
    "share of an operation's in-flight slots (`INBOUND_MAX_IN_FLIGHT`, `ROUTE_SUGGESTION_MAX_IN_FLIGHT`, per replica) one Integration Client may hold (at least one); beyond, 503 `service_busy` + `Retry-After`",
  ),
  inFlightTenantSharePercent: env('IN_FLIGHT_TENANT_SHARE_PERCENT', int(50, 1, 100)).describe(
    "the same for all of one tenant's Integration Clients together (at least one slot): a tenant with many clients holds no more than this; its clients share it, so one busy client can leave its siblings none. Never below `IN_FLIGHT_CLIENT_SHARE_PERCENT`: a client allowed more than its tenant's share may use it",
  ),
  memoryBudget: env('GATEWAY_MEMORY_BUDGET_BYTES', memoryBudget).describe(
    "resident memory the gateway keeps under by refusing work before it is read: `auto` is the container's memory limit (cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`; off where none is set), `off`, or bytes. A body's cost (5 × its bytes) and a draft's (its distance matrix) are reserved before the body is read or the draft computed; beyond what the budget leaves for requests, 503 `service_busy` + `Retry-After`; past a client's or tenant's share of it (`IN_FLIGHT_CLIENT_SHARE_PERCENT`, `IN_FLIGHT_TENANT_SHARE_PERCENT`), 429 `memory_share_exceeded`. The arithmetic and measured peaks: [operations.md](operations.md#memory)",
  ),
  refusedBodyDrainBytes: env('REFUSED_BODY_DRAIN_BYTES', int(16 * MiB, 0, 1024 * MiB)).describe(
    "after a refusal answered before its body was read (401, 403, 413, 429, 503, …; not 408), the gateway keeps reading and discarding what the client still sends, at most this many bytes, then closes the connection (a bounded \"lingering close\", as nginx's): a client that writes its whole body before it reads (Python's `http.client` and `requests`, many Java and .NET clients) reads the answer instead of a broken pipe. The bytes count against the client's (unauthenticated: the address's) and its tenant's upload quota; where the quota has no room the discarding waits for its next window (reads at the quota's rate) instead of closing, so a client repeating a refused body one request after another reads every refusal; a client refused on more connections at once than its quota discards within `REFUSED_BODY_DRAIN_MS` is cut (at the defaults 64–80 MiB per client within the 15 s, four or five 16 MiB windows: six 10 MB bodies sent at once are all read, beyond eight some are cut). The default is the largest body the gateway accepts at the defaults (`INBOUND_BATCH_MAX_BYTES`): a refusal never costs more reading than an accepted body. `0`: close at once (see [api-guide.md](api-guide.md#the-interface-in-short))",
  ),
  refusedBodyDrainMs: env('REFUSED_BODY_DRAIN_MS', int(15_000, 0, 600_000)).describe(
    'the same lingering close ends this long after the answer at the latest, whatever is still arriving: about `REFUSED_BODY_DRAIN_BYTES` at 10 Mbit/s (nginx keeps a refused connection up to 30 s, `lingering_time`). A client done sending is closed at once; `0`: close at once',
  ),
});

const inbound = section('inbound targets: batches, chunks, import jobs', {
  batchMaxTargets: env('INBOUND_BATCH_MAX_TARGETS', int(10_000, 1, 1_000_000)).describe(
    'most targets in one batch (413 beyond)',
  ),
  batchMaxBytes: env('INBOUND_BATCH_MAX_BYTES', int(16 * MiB, 1024, 256 * MiB)).describe(
    'largest inbound batch body (413 beyond)',
  ),
  chunkMaxBytes: env('INBOUND_CHUNK_MAX_BYTES', int(512 * 1024, 4096, 3 * MiB)).describe(
    'targets are cut into Kafka messages of at most this size',
  ),
  maxInFlight: env('INBOUND_MAX_IN_FLIGHT', int(16, 1, 10_000)).describe(
    'inbound requests (single and batch together) one gateway works on at once; more answer 503 `service_busy` + Retry-After (backpressure)',
  ),
  expressMaxTargets: env('INBOUND_EXPRESS_MAX_TARGETS', int(100, 0, 1_000_000)).describe(
    'imports of at most this many accepted targets (in one chunk) take the express lane (`<prefix>inbound.targets.express`), applied by the `inbound-express` worker kind (its own consumer group and apply slots; deploy it as its own process) so they never wait behind a bulk backlog; 0: every import takes the bulk lane',
  ),
  // On 2 cores a second thread took A from 125-131k to 134-150k targets/s, p99 from 151-191 to 47-68 ms.
  parseThreads: env(
    'INBOUND_PARSE_THREADS',
    int(Math.max(2, availableParallelism() - 1), 1, 64),
    'cores − 1 (at least 2)',
  ).describe(
    "worker threads that decode, parse, validate and cut into chunks inbound batches of 64 KiB and more, off the gateway's event loop; at least 2 so that one client's 16 MiB batch does not hold every other batch behind it. Produce calls of 64 KiB and more go through a kafkajs producer of their own in one more thread (encoding and checksums of large batches off the loop; small writes never queue behind them). These threads run at nice 10, so when cores are short the event loop (every client's requests, `/livez`) goes first, and carry names (`batch-parse`, `kafka-producer`) that `top -H` and `ps -L` show",
  ),
  importJobsMaxTake: env('IMPORT_JOBS_MAX_TAKE', int(200, 1, 10_000)).describe(
    'largest `take` of GET /api/v1/import-jobs (400 beyond)',
  ),
});

const routeSuggestions = section('route suggestion drafts', {
  maxInFlight: env('ROUTE_SUGGESTION_MAX_IN_FLIGHT', int(2, 1, 64)).describe(
    'route suggestion drafts one gateway computes at once (503 beyond)',
  ),
  budgetMs: env('ROUTE_SUGGESTION_BUDGET_MS', int(30_000, 1, 600_000)).describe(
    "wall-clock budget of one draft's computation; beyond, its worker thread is stopped and the request answers 422 `computation_budget_exceeded`. A draft is also stopped when its client disconnects",
  ),
});

const oauth = section('the OAuth 2.0 token endpoint and access tokens', {
  signingKey: env('OAUTH_SIGNING_KEY', text()).describe(
    'PKCS#8 PEM (EC P-256 → ES256, or Ed25519 → EdDSA; `\\n` escapes accepted) that signs access tokens; only its public half is stored in PostgreSQL. Unset: see `OAUTH_KEY_ENCRYPTION_KEY`',
  ),
  issuer: env('OAUTH_ISSUER', z.string().max(500).default('urn:connect-integration')).describe(
    '`iss` of access tokens (checked on `/connect/v1`)',
  ),
  audience: env('OAUTH_AUDIENCE', z.string().max(500).default('connect/v1')).describe(
    '`aud` of access tokens (checked on `/connect/v1`)',
  ),
  tokenTtlSeconds: env('OAUTH_TOKEN_TTL_SECONDS', int(600, 60, 86_400)).describe(
    'access token lifetime; gateways also refuse tokens living longer (`exp − iat`), so lowering it refuses tokens already issued with the old value',
  ),
  keyEncryptionKey: env('OAUTH_KEY_ENCRYPTION_KEY', text()).describe(
    '32 random bytes, base64 (`openssl rand -base64 32`), the same on every replica: the first gateway generates an ES256 key and stores it in `oauth_signing_keys` encrypted (AES-256-GCM) under this key; every replica signs with it. Unset (and no `OAUTH_SIGNING_KEY`): each gateway signs with a key of its own, held in memory only, publishing its public half. Never logged; malformed: the gateway does not start',
  ),
  keyEncryptionKeysPrevious: env('OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS', text()).describe(
    'retired encryption keys, comma-separated: what one of them encrypted is re-encrypted with `OAUTH_KEY_ENCRYPTION_KEY` when a gateway starts (rotation)',
  ),
  tokenClientLimitPerMinute: env('OAUTH_TOKEN_CLIENT_LIMIT_PER_MINUTE', int(30, 1, 1_000_000)).describe(
    'token requests per minute that authenticate as one Integration Client, per gateway replica; beyond, 429 `slow_down` + `Retry-After`',
  ),
  tokenAddressLimitPerMinute: env('OAUTH_TOKEN_ADDRESS_LIMIT_PER_MINUTE', int(300, 1, 1_000_000)).describe(
    'token requests per minute that do not authenticate (`invalid_client`, `invalid_request`) from one client address (IPv6: per /64), per gateway replica; beyond, those are answered 429 `slow_down` + `Retry-After`. A valid secret is never refused by it',
  ),
});

const webhooks = section('webhook endpoints and their dispatcher', {
  timeoutMs: env('WEBHOOK_TIMEOUT_MS', int(10_000, 100, 120_000)).describe(
    'per-attempt timeout of a webhook POST (connect, response and body)',
  ),
  retryScheduleMs: env('WEBHOOK_RETRY_SCHEDULE', retrySchedule.transform(secondsToMs)).describe(
    'seconds before the 2nd, 3rd, … attempt (±20% jitter; about a day, 8 attempts); after the last the delivery is `Failed` and its endpoint `Disabled`',
  ),
  pollIntervalMs: env('WEBHOOK_POLL_INTERVAL_MS', int(1000, 10, 60_000)).describe(
    'how often an idle dispatcher looks for due deliveries: the backstop (retries and breaker probes coming due, a notification missed while its LISTEN connection was replaced); a commit that makes deliveries due wakes it at once (NOTIFY)',
  ),
  concurrency: env('WEBHOOK_CONCURRENCY', int(512, 1, 10_000)).describe(
    'webhook requests one dispatcher process has open at once (its slots; a hard cap): an open request costs a socket and a few KiB',
  ),
  tenantSharePercent: env('WEBHOOK_TENANT_SHARE_PERCENT', int(25, 1, 100)).describe(
    "percentage of one dispatcher process's slots that one tenant's deliveries may hold at once (at least one slot): a ceiling; free slots go to the tenant that used least slot time lately, and `WEBHOOK_RESERVE_PERCENT` keeps room for endpoints that answer",
  ),
  reservePercent: env('WEBHOOK_RESERVE_PERCENT', int(25, 0, 90)).describe(
    "percentage of one dispatcher process's slots held back for endpoints that answer (last attempt succeeded, none of their requests slow): deliveries to failing, timing-out or untried endpoints may only take the rest, so however many tenants' endpoints hang, one that answers finds a slot",
  ),
  lane: env('WEBHOOK_LANE', oneOf(['all', 'answering', 'not-answering'], 'all')).describe(
    'which deliveries this dispatcher process takes: `all`; `answering`: only those to endpoints that answer (last attempt succeeded, none of their requests slow); `not-answering`: only the others (failing, timing out, never tried), with all its slots (no reserve). Run `answering` and `not-answering` processes apart so that no hanging request shares an event loop with a healthy delivery (docs/operations.md); every deployment needs both lanes served: `answering` processes alone never try a new endpoint',
  ),
  slowAttemptMs: env('WEBHOOK_SLOW_ATTEMPT_MS', int(1000, 10, 120_000)).describe(
    'a request open this long (or an attempt that took this long) makes its endpoint slow to that dispatcher: it loses the reserved slots until an attempt answers faster',
  ),
  endpointConcurrency: env('WEBHOOK_ENDPOINT_CONCURRENCY', int(4, 1, 1000)).describe(
    'attempts in flight to one endpoint at once, across all dispatchers, for an endpoint whose client set no `maxInFlight`',
  ),
  endpointConcurrencyMax: env('WEBHOOK_ENDPOINT_CONCURRENCY_MAX', int(16, 1, 1000)).describe(
    'the highest `maxInFlight` a client may set on an endpoint (400 above it); a lower value applies at once to endpoints set higher',
  ),
  breakerFailures: env('WEBHOOK_BREAKER_FAILURES', int(5, 1, 1000)).describe(
    'consecutive failed attempts to one endpoint that open its circuit breaker: nothing more is sent to it until a probe is due',
  ),
  breakerFailureRatePercent: env('WEBHOOK_BREAKER_FAILURE_RATE_PERCENT', int(70, 0, 100)).describe(
    "an endpoint's circuit breaker also opens when at least this percentage of its last `WEBHOOK_BREAKER_WINDOW` attempts failed (counted once it has made that many since its breaker last closed); `0`: only failures in a row open it",
  ),
  breakerWindow: env('WEBHOOK_BREAKER_WINDOW', int(10, 2, 62)).describe(
    'the recent attempts to one endpoint whose failure rate the breaker looks at, and the fewest it needs to open on the rate',
  ),
  breakerOpenMs: env('WEBHOOK_BREAKER_OPEN_MS', int(30_000, 100, 86_400_000)).describe(
    'how long an opened breaker sends nothing before it lets one probe through; doubled after each failed probe',
  ),
  breakerOpenMaxMs: env('WEBHOOK_BREAKER_OPEN_MAX_MS', int(900_000, 100, 86_400_000)).describe(
    'the longest an open breaker waits before a probe, however many probes failed',
  ),
  allowPrivateTargets: env('WEBHOOK_ALLOW_PRIVATE_TARGETS', flag('false')).describe(
    '`true` allows endpoints on loopback, private, link-local … addresses (development, tests); read by the dispatcher and by `admin webhook create`',
  ),
  endpointsPerClient: env('WEBHOOK_ENDPOINTS_PER_CLIENT', int(20, 1, 1000)).describe(
    'webhook endpoints one client may register through the API (409 `webhook_endpoint_limit` beyond)',
  ),
});

const events = section('the event feed and its retention', {
  retentionMs: env('EVENT_RETENTION_HOURS', decimal(336, minuteInHours, 87_600).transform(hoursToMs)).describe(
    'events (with their deliveries and attempts) older than this many hours are pruned; an event feed cursor older than the oldest kept is 410 `cursor_expired`. Decimals allowed (`0.1`: 6 minutes), down to about a minute: short retention is for soaks and tests (`npm run bench:soak`)',
  ),
  pruneIntervalMs: env('EVENT_PRUNE_INTERVAL_MS', int(60_000, 100, 86_400_000)).describe(
    'how often each webhook dispatcher prunes events past the retention',
  ),
  feedMaxWaitSeconds: env('EVENT_FEED_MAX_WAIT_SECONDS', int(30, 1, 300)).describe(
    'longest `wait` (long-poll) of `GET /api/v1/events`',
  ),
  feedWaitersPerClient: env('EVENT_FEED_WAITERS_PER_CLIENT', int(4, 1, 10_000)).describe(
    'long-polls of one client waiting on one gateway (429 `too_many_waiting` beyond)',
  ),
  feedWaitersPerTenant: env('EVENT_FEED_WAITERS_PER_TENANT', int(16, 1, 100_000)).describe(
    'the same for all clients of one tenant together (at least `EVENT_FEED_WAITERS_PER_CLIENT`, as for the in-flight shares)',
  ),
  feedWaitersMax: env('EVENT_FEED_WAITERS_MAX', int(1000, 1, 100_000)).describe(
    'long-polls waiting on one gateway in all',
  ),
});

const retention = section('retention of what only says what happened to a request', {
  importJobRetentionMs: env('IMPORT_JOB_RETENTION_DAYS', decimal(90, minuteInDays, 3650).transform(daysToMs)).describe(
    'finished import jobs (with their chunk ledger and route drafts) are pruned this many days after they finished; the targets they brought stay. Also the inbound idempotency window: a batch sent again with the same `Idempotency-Key` (or `externalBatchId`) after its job was pruned is a new import job. Decimals allowed (`0.0035`: about 5 minutes), down to about a minute, for soaks and tests (`npm run bench:soak`); in production keep at least `1` (a day), so a replay within 24 h always answers the same job',
  ),
  deadLetterRetentionMs: env(
    'DEAD_LETTER_RETENTION_DAYS',
    decimal(90, minuteInDays, 3650).transform(daysToMs),
  ).describe(
    "operators' dead-letter replays and purges (`dead_letter_actions`) and the marks of the dead letters each handled (`dead_letters_handled`) are pruned this many days after they were made: a mark once Kafka no longer retains its dead letter (until then it keeps that replayed or purged dead letter out of lists, replays and `connect_dead_letters`, whatever its age), an action once none of its marks is left. Decimals allowed, down to about a minute (`0.00069`), as for `IMPORT_JOB_RETENTION_DAYS`",
  ),
  pruneIntervalMs: env('RETENTION_PRUNE_INTERVAL_MS', int(60_000, 100, 86_400_000)).describe(
    'how often a worker process prunes what is past its retention (one process at a time across all replicas, whatever kinds it hosts; bounded batches of 1,000)',
  ),
});

const workers = section('worker processes', {
  kinds: env(
    'WORKERS',
    text('', /^[a-z0-9_,\s-]*$/, 'comma-separated worker kind names').transform(list),
    '(all kinds)',
  ).describe('worker kinds one runner process hosts, comma-separated'),
  applyConcurrency: env('WORKER_APPLY_CONCURRENCY', int(2, 1, 64)).describe(
    'messages one worker process applies at once per kind (messages of one key stay in order)',
  ),
  bufferBytes: env('WORKER_BUFFER_BYTES', int(64 * MiB, MiB, 4096 * MiB)).describe(
    'fetched, unapplied message bytes one worker process holds per kind; a partition over its share is paused until applies catch up',
  ),
  pgFlushAfterKb: env('WORKER_PG_FLUSH_AFTER_KB', int(256, 0, 2048)).describe(
    "PostgreSQL's `backend_flush_after` on a worker's connections, in kB: a bulk apply hands the data pages it writes out to the disk as it goes, instead of leaving them in the OS cache until a checkpoint's fsync writes them all at once and stalls every other commit (the gateway's, small imports'); 0: not sent (the server's setting applies, e.g. behind a pooler that refuses startup options)",
  ),
  orphanGraceMs: env('ORPHAN_GRACE_MS', int(30_000, 0, 3_600_000)).describe(
    'how long a worker waits for the edge record a message names before skipping it as an orphan (the message holds only its own key meanwhile); must exceed `KAFKA_PRODUCE_TIMEOUT_MS`',
  ),
  heartbeatFile: env('WORKER_HEARTBEAT_FILE', text()).describe(
    'touched every 10 s by the worker runner (container liveness)',
  ),
  httpHost: env('WORKER_HTTP_HOST', text('0.0.0.0')).describe(
    "listen address of a worker process's `/metrics`, `/livez`, `/readyz` (no authentication: keep it internal)",
  ),
  httpPort: env('WORKER_HTTP_PORT', int(9464, 0, 65535)).describe(
    'their port (`0`: any free port; the runner prints `workers: metrics on <url>`). Worker processes on one host each need their own: `scripts/stack` gives its workers process 9464 (or this variable); docker-compose exposes 9464 inside each worker container, so `--scale` does not collide',
  ),
  id: env('WORKER_ID', z.string().max(200).default('').transform(orHostAndPid), '(`<host name>:<pid>`)').describe(
    'names this worker process where it records what it applied or dead-lettered (chunk ledgers, job requests, material usages, appointment requests), as `npm run admin -- trace` shows it; give each replica its own (a Kubernetes pod name)',
  ),
});

export const configSchema = z
  .object({
    service,
    http,
    database,
    kafka,
    auth,
    limits,
    inbound,
    routeSuggestions,
    oauth,
    webhooks,
    events,
    retention,
    workers,
  })
  .refine((c) => c.workers.orphanGraceMs > c.kafka.produceTimeoutMs, {
    // A gateway commits its edge row only after Kafka acked, which may take up to the produce
    // timeout: a shorter grace would let workers skip messages of rows that do commit.
    message: 'must be greater than KAFKA_PRODUCE_TIMEOUT_MS',
    path: ['workers', 'orphanGraceMs'],
  });

export type Config = z.output<typeof configSchema>;

/** Every setting, in the order of the reference. */
export const configSettings = settingsOf(configSchema);

export class ConfigError extends Error {}

/** Parses the environment; throws ConfigError with one line naming the first bad variable. */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  // Nested as the schema is; an empty variable counts as unset, as shells and compose files often export "".
  const input: Record<string, unknown> = {};
  for (const { env: name, path } of configSettings) {
    let at = input;
    for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    if (environment[name]) at[path.at(-1)!] = environment[name];
  }
  const parsed = configSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const name = configSettings.find((s) => s.path.join('.') === issue.path.join('.'))?.env ?? 'environment';
  throw new ConfigError(`invalid configuration: ${name}=${JSON.stringify(environment[name] ?? '')}: ${issue.message}`);
}

/** For entry points: load or print the one-line reason and exit 78 (EX_CONFIG). */
export function loadConfigOrExit(environment: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(environment);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
}
