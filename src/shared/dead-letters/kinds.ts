import type { Config } from '../config.js';
import { topicNames, type TopicName } from '../kafka/topics.js';
import { deadLetterTopic } from './headers.js';

// The dead-letter topics and what their messages belong to. Every topic a worker kind consumes
// has one, `<topic>.dlq` (src/workers/worker-kind.ts), with one partition.

/** What a dead letter's message names: the record its dead-lettering marked failed. */
export type RecordType = 'importJob' | 'fieldJob' | 'materialUsage' | 'appointmentRequest';

export type DeadLetterKind = {
  /** The name operators use (`--kind`). */
  name: string;
  /** The topic its messages came from, and go back to on replay. */
  topic: string;
  dlqTopic: string;
  record: RecordType;
  /** The payload field holding the record's id. */
  idField: string;
};

const table: { name: string; topic: TopicName; record: RecordType; idField: string }[] = [
  { name: 'inbound', topic: 'inboundTargets', record: 'importJob', idField: 'importJobId' },
  { name: 'inbound-express', topic: 'inboundTargetsExpress', record: 'importJob', idField: 'importJobId' },
  { name: 'jobs', topic: 'jobs', record: 'fieldJob', idField: 'fieldJobId' },
  { name: 'materials', topic: 'workOrderMaterials', record: 'materialUsage', idField: 'materialUsageId' },
  { name: 'appointments', topic: 'appointments', record: 'appointmentRequest', idField: 'appointmentRequestId' },
];

export const deadLetterKindNames = table.map((k) => k.name);

export function deadLetterKinds(kafka: Pick<Config['kafka'], 'topicPrefix'>): DeadLetterKind[] {
  const names = topicNames(kafka);
  return table.map(({ topic, ...k }) => ({ ...k, topic: names[topic], dlqTopic: deadLetterTopic(names[topic]) }));
}
