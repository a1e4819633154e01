// Statements of the dead-letter ledger (migration 0014): actions, and the dead letters they handled.

/** Handled dead letters of one dead-letter topic ($1), with the action that handled each. */
export const handledIn = `
  SELECT h.dlq_partition AS partition, h.dlq_offset::text AS "offset", a.id::int AS "actionId", a.action,
         a.operator, a.at
    FROM dead_letters_handled h JOIN dead_letter_actions a ON a.id = h.action_id
   WHERE h.dlq_topic = $1`;

/** $1 action, $2 operator, $3 dead-letter topic, $4 selection (jsonb), $5 note. Its count is set when done. */
export const insertAction = `
  INSERT INTO dead_letter_actions (action, operator, dlq_topic, selection, message_count, note)
  VALUES ($1, $2, $3, $4, 0, $5) RETURNING id::int AS id, at`;

/**
 * Marks dead letters ($2 partitions, $3 offsets) of topic $1 handled by action $4. Returns only
 * those it marked: one marked by a concurrent action (it waits for that one's commit) is left out,
 * so no dead letter is handled twice.
 */
export const markHandled = `
  INSERT INTO dead_letters_handled (dlq_topic, dlq_partition, dlq_offset, action_id)
  SELECT $1, u.p, u.o, $4 FROM unnest($2::int[], $3::bigint[]) AS u(p, o)
  ON CONFLICT DO NOTHING
  RETURNING dlq_partition AS partition, dlq_offset::text AS "offset"`;

export const setActionCount = `UPDATE dead_letter_actions SET message_count = $2 WHERE id = $1`;

/** The latest actions ($1 at most), optionally of some dead-letter topics only ($2, null: all). */
export const listActions = `
  SELECT id::int AS "actionId", action, operator, at, dlq_topic AS "dlqTopic", selection,
         message_count AS "messageCount", note
    FROM dead_letter_actions
   WHERE $2::text[] IS NULL OR dlq_topic = ANY($2::text[])
   ORDER BY id DESC LIMIT $1`;

/**
 * How many retained messages of each dead-letter topic are handled: one row per partition ($1
 * topics, $2 partitions, $3 low and $4 high watermarks); the connect_dead_letters metric
 * subtracts these.
 */
export const countHandledRetained = `
  SELECT p.topic, count(*)::int AS handled
    FROM unnest($1::text[], $2::int[], $3::bigint[], $4::bigint[]) AS p(topic, partition, low, high)
    JOIN dead_letters_handled h
      ON h.dlq_topic = p.topic AND h.dlq_partition = p.partition AND h.dlq_offset >= p.low AND h.dlq_offset < p.high
   GROUP BY p.topic`;
