// The environment of the service processes a capacity benchmark starts (gateway, workers, load):
// its own database and topic prefix, quiet logs, and no upload quota, so the path's capacity is
// measured, not one client's share of it.
const benchBrokers = () => process.env.KAFKA_BROKERS || '127.0.0.1:9092';

export const capacityEnv = (databaseUrl: string, topicPrefix: string): NodeJS.ProcessEnv => ({
  ...process.env,
  DATABASE_URL: databaseUrl,
  KAFKA_BROKERS: benchBrokers(),
  KAFKA_TOPIC_PREFIX: topicPrefix,
  LOG_LEVEL: 'warn',
  UPLOAD_BYTES_PER_SECOND: String(1024 * 1024 * 1024),
  UPLOAD_BYTES_PER_SECOND_PER_TENANT: String(1024 * 1024 * 1024),
});
