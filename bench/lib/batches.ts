// The benchmark's batches: realistic targets (test/support/targets.ts), distinct external ids per
// batch so every target becomes a new row. The load generator (phase A) and the bare producer
// (phase A0) build the same batches from the same parameters.
import { makeTargets } from '../../test/support/targets.js';

export type Target = ReturnType<typeof makeTargets>[number];

export const benchSourceSystem = 'bench-erp';

/** Targets of batch `index` of a series (`tag` keeps warm-up, measured and probe batches apart). */
export const batchTargets = (runId: string, tag: string, index: number, size: number): Target[] =>
  makeTargets(size, `${runId}-${tag}${index}`, index + 1);

/** The JSON body of POST /api/v1/inbound/targets/batch for one batch. */
export const batchBody = (externalBatchId: string, targetsJson: string): Buffer =>
  Buffer.from(
    `{"sourceSystem":${JSON.stringify(benchSourceSystem)},"externalBatchId":${JSON.stringify(externalBatchId)},"targets":${targetsJson}}`,
  );
