import { inTransaction } from '../../shared/db/pool.js';
import type { UsagePayload } from '../../shared/materials/usage-message.js';
import type { Envelope } from '../../shared/messages.js';
import { recordMaterialsRecorded } from '../../shared/webhooks/events.js';
import { stampValues } from '../apply-stamp.js';
import { edgeRecordOrWait } from '../edge-record.js';
import type { ApplyArgs, FailArgs } from '../worker-kind.js';
import { bookMovements, countDuplicateUsage, lockUsage, markApplied, markFailed } from './sql.js';

type UsageMessage = Envelope<UsagePayload>;
export type UsageOutcome = 'applied' | 'duplicate' | 'orphan';
type UsageRow = { id: string; tenant_id: string; location_id: string; status: string };

/**
 * Books one recorded usage in ONE transaction: lock the usage row; already Applied → nothing
 * (a redelivery); else insert its stock movements, move the balances and mark it Applied.
 * A crash before COMMIT leaves no trace; after it, the status makes redelivery a no-op.
 */
export async function applyUsage(args: ApplyArgs & { message: UsageMessage }): Promise<UsageOutcome> {
  const { pool, message, wait, stamp } = args;
  const { materialUsageId } = message.payload;
  return inTransaction(pool, async (tx) => {
    const usage = await edgeRecordOrWait(
      (await tx.query<UsageRow>(lockUsage, [materialUsageId, message.tenantId])).rows[0],
      wait,
    );
    if (!usage) return 'orphan';
    if (usage.status === 'Applied') {
      await tx.query(countDuplicateUsage, [usage.id]);
      return 'duplicate';
    }
    await tx.query(bookMovements, [usage.id, usage.tenant_id, usage.location_id]);
    await tx.query(markApplied, [usage.id, ...stampValues(stamp), 'applied']);
    await recordMaterialsRecorded(tx, usage.id); // the webhook event commits with the booking
    return 'applied';
  });
}

/** Marks a dead-lettered usage Failed (if still Pending), so readers see it will not be booked. */
export async function failUsage({ pool, message, reason, stamp }: FailArgs & { message: UsageMessage }): Promise<void> {
  await pool.query(markFailed, [
    message.payload.materialUsageId,
    message.tenantId,
    reason.slice(0, 1000),
    ...stampValues(stamp),
    'dead_lettered',
  ]);
}
