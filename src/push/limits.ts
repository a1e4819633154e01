import { FatalError, type Http } from './http.js';

export const batchPath = '/api/v1/inbound/targets/batch';

export type BatchLimits = { maxTargets: number; maxBytes: number };

type DocOperation = {
  'x-max-body-bytes'?: number;
  requestBody?: { content?: Record<string, { schema?: { $ref?: string } }> };
};
type Doc = {
  paths?: Record<string, Record<string, DocOperation>>;
  components?: { schemas?: Record<string, { properties?: { targets?: { maxItems?: number } } }> };
};

/**
 * The batch limits the gateway documents in its /openapi.json (as configured there): the targets
 * array's maxItems and the operation's x-max-body-bytes; options may only lower them.
 */
export async function readBatchLimits(http: Http, wanted: { batchSize: number | null; batchBytes: number | null }) {
  const res = await http.request('GET', '/openapi.json');
  if (res.status !== 200) throw new FatalError(`GET /openapi.json answered ${res.status}`);
  const doc = res.body as Doc;
  const op = doc.paths?.[batchPath]?.post;
  const ref = op?.requestBody?.content?.['application/json']?.schema?.$ref;
  const maxTargets = ref ? doc.components?.schemas?.[ref.split('/').pop()!]?.properties?.targets?.maxItems : undefined;
  const maxBytes = op?.['x-max-body-bytes'];
  if (!maxTargets || !maxBytes)
    throw new FatalError(`the gateway's /openapi.json documents no batch limits for POST ${batchPath}`);
  return {
    documented: { maxTargets, maxBytes },
    used: {
      maxTargets: Math.min(maxTargets, wanted.batchSize ?? Infinity),
      maxBytes: Math.min(maxBytes, wanted.batchBytes ?? Infinity),
    },
  };
}
