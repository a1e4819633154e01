// What the rest of the service knows of Kafka: these types, and createKafkaBus (bus.ts). Nothing
// outside src/shared/kafka imports kafkajs, so the client library can be swapped behind them.
import type { Logger } from '../logger.js';
import type { KafkaSecurity } from './client-security.js';
import type { ConsumerGroup, ConsumerGroupOptions } from './consumer-group.js';
import type { PartitionOffsets, StoredMessage } from './topic-reader.js';

export type { PartitionOffsets, StoredMessage } from './topic-reader.js';

export type OutboundMessage = { key: string; value: string | Buffer; headers?: Record<string, string> };

export type TopicSpec = {
  topic: string;
  partitions: number;
  /** -1 or absent: the broker's default.replication.factor. */
  replicationFactor?: number;
  configs?: Record<string, string>;
};

/** Topics the service may not create are missing or have fewer partitions than it needs. */
export class TopicsNotReadyError extends Error {}

/** Messages of one partition that a consumer group has not committed yet. */
export type PartitionLag = { topic: string; partition: number; lag: number };

/** Thrown by produce() while the broker is known unreachable, without waiting. */
export class BrokerUnavailableError extends Error {}

export interface MessageBus {
  /** Creates the missing topics, or (manageTopics false) checks that they exist: TopicsNotReadyError. */
  ensureTopics(topics: TopicSpec[]): Promise<void>;
  /**
   * At start: reaches the cluster and ensures the declared topics, within timeoutMs. Throws
   * KafkaAccessDeniedError (credentials or certificates refused) and TopicsNotReadyError, which
   * no retry can mend; resolves false when no broker answered in time (the caller goes on and
   * waits for it as for any outage), true when all is well.
   */
  checkAtStart(timeoutMs: number): Promise<boolean>;
  /** Topics produce() makes sure exist (once, on first use) before sending. */
  declareTopics(topics: TopicSpec[]): void;
  /**
   * Resolves only when every message is acknowledged by all in-sync replicas (acks=all). Large
   * calls go through the producer thread, which takes over Buffer values that own their memory:
   * do not read a message's value after the call.
   */
  produce(topic: string, messages: OutboundMessage[]): Promise<void>;
  /** False while the broker is known unreachable: produce() would fail at once. */
  available(): boolean;
  /** Throws when no broker answers within timeoutMs. */
  ping(timeoutMs: number): Promise<void>;
  /**
   * Per partition of topics: end offset minus the group's committed offset (a partition the group
   * has committed nothing for counts from its first retained offset, as the group starts from the
   * beginning). Throws when the broker does not answer within timeoutMs.
   */
  consumerLag(groupId: string, topics: string[], timeoutMs: number): Promise<PartitionLag[]>;
  /** Each partition's low and high watermark ([] when the topic does not exist); fails after timeoutMs. */
  topicOffsets(topic: string, timeoutMs: number): Promise<PartitionOffsets[]>;
  /** Every message the topic holds now, in partition and offset order ([] when it does not exist). */
  readTopic(topic: string, timeoutMs: number): Promise<StoredMessage[]>;
  consumerGroup(groupId: string, options?: ConsumerGroupOptions): ConsumerGroup;
  close(): Promise<void>;
}

export type KafkaOptions = {
  brokers: string[];
  clientId: string;
  logger: Logger;
  /** How long produce() waits for acknowledgement before it fails. */
  produceTimeoutMs?: number;
  /**
   * Bytes of sends not yet settled. A timed-out send keeps retrying inside kafkajs (it cannot be
   * cancelled), so without this bound a slow Kafka plus retrying clients would grow memory
   * without limit; beyond it produce() fails at once.
   */
  maxPendingBytes?: number;
  /** Called once per failed produce call (metrics). */
  onProduceError?: (topic: string) => void;
  /** How often a broker known down is probed for its return. */
  probeIntervalMs?: number;
  /** TLS and SASL towards the brokers (default: plaintext). */
  security?: KafkaSecurity;
  /** False: never create topics, only check that they exist with enough partitions. */
  manageTopics?: boolean;
};
