// kafkajs's values for src/shared/kafka: imported from here, never from 'kafkajs' itself (lint
// enforces it), so that what makes its produce path cheaper is in place before it runs: a native
// CRC32C (kafkajs-crc32c.ts, before kafkajs loads) and encoders that grow without zero-filling
// (kafkajs-encoder.ts). Types may come from 'kafkajs' directly.
import './kafkajs-crc32c.js';
import './kafkajs-encoder.js';

export { Kafka, logLevel, Partitioners } from 'kafkajs';
