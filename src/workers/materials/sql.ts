// Statements of the materials worker, kept apart from the logic.
import { countDuplicate, stampAssignments } from '../apply-stamp.js';

/**
 * Locks the usage row: a redelivered message waits for (and then sees) the transaction that
 * applies the same usage, so a usage is booked at most once.
 */
export const lockUsage = `
  SELECT id, tenant_id, location_id, status FROM material_usages WHERE id = $1 AND tenant_id = $2 FOR UPDATE`;

/**
 * One statement: a movement per line of a tracked item (UNIQUE (material_usage_id, line_no):
 * none twice), then the balance at the usage's location goes down by what was actually inserted,
 * summed per item. A missing balance row starts at 0 (and so goes negative). Balance rows are
 * taken in item order, so concurrent usages of several items cannot deadlock on them.
 * $1 usage id, $2 tenant id, $3 location id.
 */
export const bookMovements = `
  WITH tracked AS (
    SELECT l.line_no, l.item_id, l.quantity
      FROM material_usage_lines l
      JOIN inventory_items i ON i.id = l.item_id
     WHERE l.material_usage_id = $1 AND i.track_stock
  ), moved AS (
    INSERT INTO stock_movements (tenant_id, item_id, location_id, quantity_delta, reason, material_usage_id, line_no)
    SELECT $2, t.item_id, $3, -t.quantity, 'MaterialUsage', $1, t.line_no FROM tracked t
    ON CONFLICT (material_usage_id, line_no) DO NOTHING
    RETURNING item_id, quantity_delta
  )
  INSERT INTO inventory_balances AS b (tenant_id, item_id, location_id, quantity_on_hand, updated_at)
  SELECT $2, m.item_id, $3, sum(m.quantity_delta), now() FROM moved m GROUP BY m.item_id ORDER BY m.item_id
  ON CONFLICT (item_id, location_id) DO UPDATE
    SET quantity_on_hand = b.quantity_on_hand + EXCLUDED.quantity_on_hand, updated_at = now()`;

/** $2… the message's stamp (apply-stamp.ts). */
export const markApplied = `
  UPDATE material_usages SET status = 'Applied', applied_at = now(), failure_reason = NULL, ${stampAssignments(2)}
   WHERE id = $1`;

export const countDuplicateUsage = countDuplicate('material_usages', 'id');

/** A dead-lettered usage that is still Pending becomes Failed, with the reason; $4… the stamp. */
export const markFailed = `
  UPDATE material_usages SET status = 'Failed', failure_reason = $3, ${stampAssignments(4)}
   WHERE id = $1 AND tenant_id = $2 AND status = 'Pending'`;
