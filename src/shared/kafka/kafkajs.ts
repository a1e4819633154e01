// kafkajs's values for src/shared/kafka: imported from here, never from 'kafkajs' itself (lint
// enforces it), so its record batches are checksummed natively (kafkajs-crc32c.ts runs first).
// Types may come from 'kafkajs' directly.
import './kafkajs-crc32c.js';

export { Kafka, logLevel, Partitioners } from 'kafkajs';
