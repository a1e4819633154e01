import { createHash } from 'node:crypto';
import type { BatchLimits } from './limits.js';
import type { InputRecord } from './read-records.js';

export type Batch = {
  /** Position in the input: 0, 1, 2, … */
  index: number;
  /** Input line of each target, by its index in the batch. */
  lines: number[];
  targets: unknown[];
  body: Buffer;
  idempotencyKey: string;
};

/** An input record that is not sent: unreadable, or too large for any batch. */
export type LocalReject = { line: number; error: string; target?: unknown; raw?: string };

export type BatchItem = { batch: Batch } | { reject: LocalReject };

/**
 * The batch's Idempotency-Key: a hash of its position and its exact body. The same input cut
 * with the same limits gives the same batches, so a rerun repeats each key with the same body and
 * the service answers the earlier import job instead of queueing anything again.
 */
export const batchKey = (index: number, body: Buffer) =>
  `push-${createHash('sha256').update(`${index}\n`).update(body).digest('base64url')}`;

/** Cuts records into batches of at most maxTargets targets and maxBytes body bytes, in input order. */
export async function* cutBatches(
  records: AsyncIterable<InputRecord>,
  sourceSystem: string,
  limits: BatchLimits,
): AsyncGenerator<BatchItem> {
  const head = `{"sourceSystem":${JSON.stringify(sourceSystem)},"targets":[`;
  const tail = ']}';
  const envelopeBytes = Buffer.byteLength(head) + Buffer.byteLength(tail);
  let index = 0;
  let parts: string[] = [];
  let lines: number[] = [];
  let targets: unknown[] = [];
  let bytes = envelopeBytes;
  const close = (): Batch => {
    const body = Buffer.from(head + parts.join(',') + tail);
    const batch = { index, lines, targets, body, idempotencyKey: batchKey(index, body) };
    index++;
    parts = [];
    lines = [];
    targets = [];
    bytes = envelopeBytes;
    return batch;
  };
  for await (const record of records) {
    if ('error' in record) {
      yield { reject: record };
      continue;
    }
    const text = JSON.stringify(record.target);
    const size = Buffer.byteLength(text);
    if (envelopeBytes + size > limits.maxBytes) {
      const error = `${size} bytes: larger than a batch may be (${limits.maxBytes} bytes with its envelope)`;
      yield { reject: { line: record.line, error, target: record.target } };
      continue;
    }
    const separator = parts.length > 0 ? 1 : 0;
    if (parts.length === limits.maxTargets || bytes + separator + size > limits.maxBytes) yield { batch: close() };
    bytes += (parts.length > 0 ? 1 : 0) + size;
    parts.push(text);
    lines.push(record.line);
    targets.push(record.target);
  }
  if (parts.length > 0) yield { batch: close() };
}
