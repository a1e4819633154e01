import type { Config } from '../config.js';
import type { TopicSpec } from './message-bus.js';

// Every topic the service produces to, by purpose. Names carry KAFKA_TOPIC_PREFIX; each worker
// kind consumes one of them and dead-letters into `<topic>.dlq` (see workers/worker-kind.ts).

export const topicNames = (kafka: Pick<Config['kafka'], 'topicPrefix'>) => ({
  /** Chunks of inbound targets, keyed by import job id (a job's chunks stay in order). */
  inboundTargets: `${kafka.topicPrefix}inbound.targets`,
  /** The same for small imports (the express lane: INBOUND_EXPRESS_MAX_TARGETS), so they never queue behind a bulk backlog. */
  inboundTargetsExpress: `${kafka.topicPrefix}inbound.targets.express`,
  /** Submitted appointment requests to validate, keyed by appointment request id. */
  appointments: `${kafka.topicPrefix}appointments`,
  /** Field jobs to materialise, keyed by field job id. */
  jobs: `${kafka.topicPrefix}jobs`,
  /** Recorded work-order material usages to book as stock movements, keyed by work order id. */
  workOrderMaterials: `${kafka.topicPrefix}workorders.materials`,
});

export type TopicName = keyof ReturnType<typeof topicNames>;

/** What each topic carries and what its messages are keyed by (published in the OpenAPI description). */
export const topicPurposes: Record<TopicName, string> = {
  inboundTargets: "`inbound.targets.chunk` v2: chunks of an import job's accepted targets; key: import job id",
  inboundTargetsExpress:
    '`inbound.targets.chunk` v2 of imports of at most INBOUND_EXPRESS_MAX_TARGETS targets in one chunk (the express lane); key: import job id',
  appointments: 'submitted appointment requests to validate; key: appointment request id',
  jobs: '`jobs.create` v1: numbered field jobs to materialise; key: field job id',
  workOrderMaterials: 'recorded material usages to book; key: work order id',
};

type TopicConfig = Pick<
  Config['kafka'],
  'topicPrefix' | 'topicPartitions' | 'topicReplicationFactor' | 'topicMinInsyncReplicas'
>;

export function topicSpec(kafka: TopicConfig, name: TopicName): TopicSpec {
  return {
    topic: topicNames(kafka)[name],
    partitions: kafka.topicPartitions,
    replicationFactor: kafka.topicReplicationFactor,
    configs: {
      // Room for a chunk of targets (the gateway cuts chunks well below this).
      'max.message.bytes': String(4 * 1024 * 1024),
      // Acknowledged work is never deleted for the topic's size: a backlog larger than a broker's
      // log.retention.bytes (256 MiB a partition on scripts/kafka) would otherwise lose accepted
      // writes before the workers reach them. Time-based retention stays the broker's.
      'retention.bytes': '-1',
      ...(kafka.topicMinInsyncReplicas > 0 ? { 'min.insync.replicas': String(kafka.topicMinInsyncReplicas) } : {}),
    },
  };
}

export const allTopics = (kafka: TopicConfig): TopicSpec[] =>
  (Object.keys(topicNames(kafka)) as TopicName[]).map((name) => topicSpec(kafka, name));
