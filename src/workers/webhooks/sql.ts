// Statements of the webhook dispatcher, kept apart from the logic.

/**
 * A statement as a named (prepared) query: PostgreSQL parses it once per connection and keeps its
 * plan (a generic one once that is no dearer than planning each time). The dispatcher's
 * statements are long: planning recordSuccesses alone took 24-30 ms of a backend's CPU on the
 * bench's loaded machine, more than running it (issue 50). Needs a session per connection, as
 * the dispatcher's LISTEN does (a pooler in session mode, or the server).
 */
export const prepared = (name: string, text: string, values: unknown[]) => ({ name: `webhooks_${name}`, text, values });

/**
 * The claim lock (pg_advisory_xact_lock): this release's claims take it shared (their endpoints'
 * rows keep them apart: lockClaimEndpoints), the previous release's claims exclusive (one claim
 * at a time), so during a rolling upgrade a claim of either release never runs beside one of the
 * other that could count the same endpoint's attempts in flight.
 */
export const claimLockId = 7_239_014_561;

/**
 * Locks the endpoints a claim is about to take deliveries of ($1, from claimCandidates), in id
 * order, waiting for claims and recordings that hold them (each a few milliseconds): two claims of
 * one endpoint run one after the other, the second counting what the first took; claims of
 * different endpoints run side by side (issue 50: one lock for every claim of every dispatcher
 * was what a healthy delivery waited for in bench:webhooks' outage, p99 70 ms). FOR NO KEY UPDATE,
 * the lock the recordings take on endpoints, in their order (sql.ts recordSuccesses,
 * lockEndpointsHealth), and one that inserting deliveries (FOR KEY SHARE) does not wait for. No
 * deadlock: a claim holds no other lock while it waits here, and takes deliveries after it
 * without waiting (SKIP LOCKED). Takes the claim lock ($2: claimLockId) first, shared, in the
 * same statement (one round trip fewer). Returns those still Active.
 */
export const lockClaimEndpoints = `
  WITH claim_lock AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($2))
  SELECT id FROM webhook_endpoints, claim_lock
   WHERE id = ANY($1::uuid[]) AND status = 'Active' ORDER BY id FOR NO KEY UPDATE OF webhook_endpoints`;

/**
 * lockClaimEndpoints without waiting: endpoints locked now are left out (the claim of the
 * endpoints not known to answer: their recordings hold a batch of up to 128 failures' endpoints
 * for the whole transaction, 70-80 ms at p99 in bench:webhooks' outage, and the claim loop, in the
 * process's claim turn, kept the other loop's claim of a healthy delivery waiting meanwhile; issue
 * 50). What is left out is looked at again when a slot comes free, as those recordings do.
 */
export const lockFreeClaimEndpoints = `${lockClaimEndpoints} SKIP LOCKED`;

/**
 * Which due deliveries to claim, fairly; what claimDeliveries and claimCandidates share. Due:
 * Pending ones whose time has come and Delivering ones whose lease expired (their dispatcher died
 * mid-attempt), of Active endpoints whose breaker lets something through. At most $1 (this
 * dispatcher's free slots: its hard cap).
 *
 * - Per endpoint: at most its share in flight at once, across all dispatchers (max_in_flight, or
 *   $2 where unset, never above $3; one while its breaker is half open, probing), oldest due first.
 * - Endpoints that answer (issue 50): its last attempt succeeded, its breaker is closed, and it is
 *   not among $10 (endpoints with a slow request at this dispatcher). Deliveries to any other
 *   endpoint take at most $9 of the slots (the free ones beyond the reserve, dispatcher-slots.ts,
 *   at most noisyClaimMax: dispatcher.ts): at most $9 such endpoints are looked at, those of the
 *   tenants that used least first; with $9 = 0, none. With $14, only those (a claim loop of its
 *   own takes the endpoints that answer).
 * - Per tenant, as this dispatcher knows them ($5 ids, $6 slots held here, $7 slot-ms used
 *   lately, $8 typical attempt ms; $11 for a tenant not listed): at most $4 − held slots; its
 *   deliveries one endpoint after another (the first due of every endpoint, then the second …),
 *   its n-th ordered at used + (n − 1) × typical (start-time fair queueing by slot time).
 * - Across tenants: by that order, least used first; the oldest due breaks a tie.
 * - $12: ids this dispatcher is still working on (an outcome waiting for PostgreSQL to come
 *   back), never its own to take again. $13: only these endpoints (null: all).
 */
const chooseDue = `tenant AS (
    SELECT * FROM unnest($5::uuid[], $6::int[], $7::float8[], $8::float8[]) AS t(tenant_id, held, used_ms, cost_ms)
  ), endpoint_health AS (
    SELECT ep.id, ep.tenant_id, ep.max_in_flight, ep.breaker_opened_at,
           ep.breaker_opened_at IS NULL AND ep.last_success_at IS NOT NULL
             AND (ep.last_failure_at IS NULL OR ep.last_success_at >= ep.last_failure_at)
             AND ep.id <> ALL($10::uuid[]) AS answering
      FROM webhook_endpoints ep
     WHERE ep.status = 'Active'
       AND (ep.breaker_probe_at IS NULL OR ep.breaker_probe_at <= now())
       AND ($13::uuid[] IS NULL OR ep.id = ANY($13::uuid[]))
       -- a tenant whose share is full here is not looked at further
       AND $4 > coalesce((SELECT t.held FROM tenant t WHERE t.tenant_id = ep.tenant_id), 0)
  ), endpoint_due AS (
    SELECT h.id, h.tenant_id, h.answering, h.max_in_flight, h.breaker_opened_at,
           coalesce((SELECT t.used_ms FROM tenant t WHERE t.tenant_id = h.tenant_id), 0) AS used_ms,
           coalesce((SELECT t.cost_ms FROM tenant t WHERE t.tenant_id = h.tenant_id), $11) AS cost_ms,
           (SELECT min(d.next_attempt_at) FROM webhook_deliveries d
             WHERE d.endpoint_id = h.id AND d.status IN ('Pending', 'Delivering') AND d.next_attempt_at <= now()
               AND (d.lease_until IS NULL OR d.lease_until < now())) AS oldest_due
      FROM endpoint_health h
     WHERE CASE WHEN h.answering THEN NOT $14::boolean ELSE $9 > 0 END
  ), endpoint_room AS (
    SELECT h.id, h.tenant_id, h.answering, h.used_ms, h.cost_ms, h.oldest_due,
           CASE WHEN h.breaker_opened_at IS NULL THEN least(coalesce(h.max_in_flight, $2), $3) ELSE 1 END
             - (SELECT count(*) FROM webhook_deliveries f
                 WHERE f.endpoint_id = h.id AND f.status = 'Delivering' AND f.lease_until >= now()) AS room
      FROM endpoint_due h
     WHERE h.oldest_due IS NOT NULL
  ), endpoint_pick AS (
    SELECT id, tenant_id, answering, room FROM endpoint_room WHERE answering
    UNION ALL
    -- of the others, only as many endpoints as their slots could take (hundreds may hang: fewer
    -- rows for what follows), in the fair order below (a tenant's n-th endpoint as its n-th delivery)
    (SELECT id, tenant_id, answering, room FROM (
       SELECT *, row_number() OVER (PARTITION BY tenant_id ORDER BY oldest_due, id) AS tenant_rank
         FROM endpoint_room WHERE NOT answering AND room > 0) e
      ORDER BY used_ms + (tenant_rank - 1) * cost_ms, oldest_due, id LIMIT $9)
  ), candidates AS (
    SELECT c.id, c.endpoint_id, r.tenant_id, r.answering, c.next_attempt_at,
           row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at, c.id) AS endpoint_rank
      FROM endpoint_pick r
     CROSS JOIN LATERAL (
       SELECT d.id, d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.endpoint_id = r.id AND d.status IN ('Pending', 'Delivering') AND d.next_attempt_at <= now()
          AND (d.lease_until IS NULL OR d.lease_until < now())
          AND d.id <> ALL($12::bigint[])
        ORDER BY d.next_attempt_at, d.id
        LIMIT greatest(r.room, 0)) c
  ), tenant_ranked AS (
    SELECT c.id, c.endpoint_id, c.answering, c.next_attempt_at, t.used_ms, t.cost_ms, $4 - coalesce(t.held, 0) AS tenant_room,
           row_number() OVER (PARTITION BY c.tenant_id ORDER BY c.endpoint_rank, c.next_attempt_at, c.id) AS tenant_rank
      FROM candidates c
      LEFT JOIN tenant t ON t.tenant_id = c.tenant_id
  ), ordered AS (
    SELECT id, endpoint_id, answering, next_attempt_at,
           coalesce(used_ms, 0) + (tenant_rank - 1) * coalesce(cost_ms, $11) AS fair_at
      FROM tenant_ranked WHERE tenant_rank <= tenant_room
  ), ranked AS (
    SELECT id, endpoint_id, answering, next_attempt_at, fair_at,
           row_number() OVER (PARTITION BY answering ORDER BY fair_at, next_attempt_at, id) AS rank_in_pool
      FROM ordered
  ), chosen AS (
    SELECT id, endpoint_id, answering FROM ranked WHERE answering OR rank_in_pool <= $9
     ORDER BY fair_at, next_attempt_at, id LIMIT $1`;

/**
 * The endpoints a claim would take deliveries of now (chooseDue, $13 null), read without the
 * claim lock: what costs most (looking at every Active endpoint, hundreds of them hanging in an
 * outage) is done here, beside other dispatchers' claims, and claimDeliveries looks again at
 * these endpoints only, under the lock. Empty: nothing to claim, no lock taken (issue 50: claims
 * of noisy endpoints held the lock for 10-50 ms, and a healthy delivery waited behind them).
 */
export const claimCandidates = `
  WITH ${chooseDue}
  )
  SELECT DISTINCT endpoint_id FROM chosen`;

/**
 * Claims due deliveries (chooseDue, of the endpoints $13 that claimCandidates found and
 * lockClaimEndpoints locked), for $15 ms each. Runs after those locks in its transaction (a
 * statement of its own, so this one's snapshot sees what the claims and recordings it waited for
 * committed): the counts of attempts in flight it reads cannot be raced by another claim of the
 * same endpoints (the candidates were read before the locks: they are only where to look, counted
 * again here). FOR UPDATE SKIP LOCKED still skips a delivery whose outcome is being recorded
 * right now. Returns what the attempt needs, and whether its endpoint counted as answering.
 * The chosen rows are locked by id: "not finished" says what "Pending or Delivering" would, but
 * does not make the index of due deliveries a way in, which the planner, with statistics of an
 * empty queue, would walk whole (migration 0035; test/integration/webhook-claim-plan.test.ts).
 */
export const claimDeliveries = `
  WITH ${chooseDue}
  ), picked AS (
    SELECT d.id, p.answering FROM webhook_deliveries d JOIN chosen p ON p.id = d.id
     WHERE d.status NOT IN ('Succeeded', 'Failed') AND (d.lease_until IS NULL OR d.lease_until < now())
       FOR UPDATE OF d SKIP LOCKED
  ), claimed AS (
    UPDATE webhook_deliveries d
       SET status = 'Delivering', lease_until = now() + $15 * interval '1 millisecond', lease_token = gen_random_uuid(),
           updated_at = now() -- the attempt is counted when it begins (beginAttempts), not here
      FROM picked WHERE d.id = picked.id
    RETURNING d.id, d.tenant_id, d.event_id, d.endpoint_id, d.attempt_count, d.round_attempts, d.lease_token,
              picked.answering
  )
  SELECT c.id, c.tenant_id, c.event_id, c.endpoint_id, c.attempt_count, c.round_attempts, c.lease_token, c.answering,
         e.type, e.body, ep.url, ep.secret,
         CASE WHEN ep.previous_secret_expires_at > now() THEN ep.previous_secret END AS previous_secret
    FROM claimed c
    JOIN webhook_events e ON e.id = c.event_id
    JOIN webhook_endpoints ep ON ep.id = c.endpoint_id`;

/**
 * Begins the attempts of claimed deliveries ($1 ids, $2 their lease tokens): restarts each lease
 * ($3 ms) only while its token is still this dispatcher's, so the lease covers the attempt, not
 * the wait since the claim. A delivery not returned: another dispatcher claimed it meanwhile (or
 * finished it), so this one must not send. The attempt is counted here, right before it is sent,
 * not at the claim: a claim never sent (its lease lost, its dispatcher killed) uses up nothing of
 * the retry schedule. Returns the counts. A replay asked for since the claim is what this attempt
 * sends: it starts the new round. One statement for all the deliveries a claim (or several) took;
 * rows locked in id order, as every writer of several deliveries locks them.
 */
export const beginAttempts = `
  UPDATE webhook_deliveries d
     SET lease_until = now() + $3 * interval '1 millisecond', attempt_count = d.attempt_count + 1,
         round_attempts = CASE WHEN d.replay_requested THEN 1 ELSE d.round_attempts + 1 END, replay_requested = false,
         updated_at = now()
    FROM (SELECT w.id FROM webhook_deliveries w
            JOIN unnest($1::bigint[], $2::uuid[]) AS b(id, token) ON w.id = b.id AND w.lease_token = b.token
           ORDER BY w.id FOR UPDATE OF w) mine
   WHERE d.id = mine.id
  RETURNING d.id, d.attempt_count, d.round_attempts`;

/**
 * Renews the leases ($3 ms from now) of deliveries a dispatcher holds ($1 ids, $2 their lease
 * tokens), while they are still its own (lease.ts). Rows locked now are skipped: the recording
 * of an outcome holds that lock (and a claim skips them too), so renewing never waits for it.
 * Returns those renewed.
 */
export const renewLeases = `
  UPDATE webhook_deliveries d SET lease_until = now() + $3 * interval '1 millisecond'
    FROM (SELECT w.id FROM webhook_deliveries w
            JOIN unnest($1::bigint[], $2::uuid[]) AS held(id, token) ON w.id = held.id AND w.lease_token = held.token
             FOR UPDATE OF w SKIP LOCKED) mine
   WHERE d.id = mine.id
  RETURNING d.id`;

// Recording outcomes (record.ts): many attempts' outcomes in one transaction, each statement for
// all of them (unnest of one array per column), in this order: the attempts' rows, the
// deliveries, their endpoints' health (locked, decided in breaker.ts, written), endpoints
// disabled. Deliveries are locked in id order before their endpoints, endpoints in id order:
// the order of every writer of several (endpoints.ts deleteEndpoint, deleteDeliveries).

/**
 * Records successful attempts in one statement (no transaction of several statements: a success
 * needs no decision of breaker.ts): $1 delivery ids, $2 lease tokens, $3 event ids, $4 endpoint
 * ids, $5 attempt numbers, $6 status codes, $7 latencies, $8 response snippets, $9 started at;
 * $10 the breaker's window. What insertAttempts, settleDeliveries and updateEndpointsHealth do
 * for successes, in the same lock order: the deliveries still this dispatcher's (id order), then
 * their endpoints (id order), each endpoint once for all its successes (failures in a row reset,
 * the breaker closed; when it was open its window starts afresh at the first). The attempts'
 * rows are inserted last (their foreign keys checked on deliveries already locked). Returns the
 * deliveries settled (chained false): whether a replay was asked for meanwhile (queued again, as
 * settleDeliveries does), and whether their endpoint's breaker was open (closed now).
 *
 * Chaining (issue 50): for each success whose $11 is true (the dispatcher asks only for fast
 * successes: dispatcher.ts), the same statement begins that endpoint's next due delivery, which
 * the dispatcher sends in the slot the finished attempt held: no claim, no beginning of its own
 * (this commit's flush covers it). Only what the claim could take: Pending and due, its endpoint
 * Active (its breaker is closed by this very success), not among $13 (deliveries this dispatcher
 * has in hand), oldest due first; and at most as many per endpoint as its max_in_flight ($14
 * where unset, never above $15) leaves room for beside the attempts in flight as counted here
 * (Delivering under a live lease, those settled by this statement left out). A chained delivery
 * replaces one that this statement settles, so the endpoint's count in flight does not grow: no
 * claim lock is needed (claimDeliveries counts the settled one while it is in flight, the chained
 * one once this commits). Only in place of a delivery whose lease is still live: one whose lease
 * lapsed (its dispatcher cut off from PostgreSQL) was not counted by claims meanwhile. Rows locked
 * now are skipped (a claim taking them). Its lease ($12 ms), lease token, status and counts are
 * set as claimDeliveries and beginAttempts set them; returned (chained true) with what the
 * attempt needs, as the claim returns it. The next deliveries are locked after the endpoints, but
 * never waited for (SKIP LOCKED): no new lock order.
 */
export const recordSuccesses = `
  WITH o AS (
    SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::uuid[], $5::integer[], $6::integer[], $7::integer[],
                         $8::text[], $9::timestamptz[], $11::boolean[])
             AS o(id, token, event_id, endpoint_id, attempt, status_code, latency_ms, snippet, started_at, chain)
  ), inserted AS (
    INSERT INTO webhook_attempts (delivery_id, tenant_id, event_id, endpoint_id, attempt, outcome, status_code,
                                  latency_ms, error, response_snippet, started_at)
    SELECT o.id, (SELECT d.tenant_id FROM webhook_deliveries d WHERE d.id = o.id), o.event_id, o.endpoint_id, o.attempt,
           'Succeeded', o.status_code, o.latency_ms, NULL, o.snippet, o.started_at
      FROM o
     WHERE NOT EXISTS (SELECT 1 FROM webhook_attempts w
                        WHERE w.event_id = o.event_id AND w.delivery_id = o.id AND w.attempt = o.attempt)
     ORDER BY o.id
  ), mine AS (
    SELECT w.id, w.endpoint_id, w.replay_requested AS replayed, o.chain AND w.lease_until >= now() AS chain
      FROM webhook_deliveries w JOIN o ON w.id = o.id AND w.lease_token = o.token
     ORDER BY w.id FOR UPDATE OF w
  ), settled AS (
    UPDATE webhook_deliveries d
       SET status = CASE WHEN m.replayed THEN 'Pending' ELSE 'Succeeded' END,
           next_attempt_at = CASE WHEN m.replayed THEN now() ELSE d.next_attempt_at END,
           round_attempts = CASE WHEN m.replayed THEN 0 ELSE d.round_attempts END, replay_requested = false,
           completed_at = CASE WHEN m.replayed THEN d.completed_at ELSE now() END,
           lease_until = NULL, lease_token = NULL, last_error = NULL, updated_at = now()
      FROM mine m
     WHERE d.id = m.id
    RETURNING d.id, d.endpoint_id, m.replayed, m.chain
  ), endpoint AS (
    SELECT ep.id, ep.breaker_opened_at IS NOT NULL AS was_open, s.n, s.chain, ep.status, ep.max_in_flight
      FROM webhook_endpoints ep
      JOIN (SELECT endpoint_id, count(*)::integer AS n, count(*) FILTER (WHERE chain)::integer AS chain
              FROM settled GROUP BY endpoint_id) s ON s.endpoint_id = ep.id
     ORDER BY ep.id FOR NO KEY UPDATE OF ep
  ), healed AS (
    UPDATE webhook_endpoints ep
       SET consecutive_failures = 0, last_success_at = now(), breaker_opened_at = NULL, breaker_probe_at = NULL,
           breaker_trips = 0, updated_at = now(),
           recent_failures_mask = CASE WHEN e.was_open OR e.n >= $10::integer THEN 0
                                       ELSE (ep.recent_failures_mask << e.n) & ((1::bigint << $10::integer) - 1) END,
           recent_attempts = CASE WHEN e.was_open THEN least(e.n - 1, $10::integer)
                                  ELSE least(ep.recent_attempts + e.n, $10::integer) END
      FROM endpoint e
     WHERE ep.id = e.id
    RETURNING ep.id, e.was_open
  ), chain_room AS (
    SELECT e.id,
           least(e.chain, least(coalesce(e.max_in_flight, $14::integer), $15::integer)
             - (SELECT count(*) FROM webhook_deliveries f
                 WHERE f.endpoint_id = e.id AND f.status = 'Delivering' AND f.lease_until >= now()
                   AND NOT EXISTS (SELECT 1 FROM mine m WHERE m.id = f.id)))::integer AS n
      FROM endpoint e
     WHERE e.chain > 0 AND e.status = 'Active'
  ), chain_next AS (
    SELECT c.id FROM chain_room r
     CROSS JOIN LATERAL (
       SELECT d.id FROM webhook_deliveries d
        WHERE d.endpoint_id = r.id AND d.status = 'Pending' AND d.next_attempt_at <= now()
          AND d.id <> ALL($13::bigint[])
        ORDER BY d.next_attempt_at, d.id
        LIMIT greatest(r.n, 0)
          FOR UPDATE OF d SKIP LOCKED) c
  ), begun AS (
    UPDATE webhook_deliveries d
       SET status = 'Delivering', lease_until = now() + $12 * interval '1 millisecond', lease_token = gen_random_uuid(),
           attempt_count = d.attempt_count + 1,
           round_attempts = CASE WHEN d.replay_requested THEN 1 ELSE d.round_attempts + 1 END, replay_requested = false,
           updated_at = now()
      FROM chain_next n
     WHERE d.id = n.id
    RETURNING d.id, d.tenant_id, d.event_id, d.endpoint_id, d.attempt_count, d.round_attempts, d.lease_token
  )
  SELECT false AS chained, s.id, s.replayed, coalesce(h.was_open, false) AS breaker_was_open,
         NULL::uuid AS tenant_id, NULL::text AS event_id, NULL::uuid AS endpoint_id, NULL::integer AS attempt_count,
         NULL::integer AS round_attempts, NULL::uuid AS lease_token, NULL::text AS type, NULL::text AS body,
         NULL::text AS url, NULL::text AS secret, NULL::text AS previous_secret
    FROM settled s LEFT JOIN healed h ON h.id = s.endpoint_id
  UNION ALL
  SELECT true, b.id, false, false, b.tenant_id, b.event_id, b.endpoint_id, b.attempt_count, b.round_attempts,
         b.lease_token, e.type, e.body, ep.url, ep.secret,
         CASE WHEN ep.previous_secret_expires_at > now() THEN ep.previous_secret END
    FROM begun b
    JOIN webhook_events e ON e.id = b.event_id
    JOIN webhook_endpoints ep ON ep.id = b.endpoint_id`;

/**
 * Records attempts ($1 delivery ids, $2 event ids, $3 endpoint ids, $4 attempt numbers, $5
 * outcomes, $6 status codes, $7 latencies, $8 errors, $9 response snippets, $10 started at); each
 * at most once per delivery and attempt number, so recording again after a COMMIT whose answer
 * was lost (the connection died) does not list an attempt twice.
 */
export const insertAttempts = `
  INSERT INTO webhook_attempts (delivery_id, tenant_id, event_id, endpoint_id, attempt, outcome, status_code, latency_ms,
                                error, response_snippet, started_at)
  SELECT a.delivery_id, (SELECT d.tenant_id FROM webhook_deliveries d WHERE d.id = a.delivery_id), a.event_id,
         a.endpoint_id, a.attempt, a.outcome, a.status_code, a.latency_ms, a.error, a.snippet, a.started_at
    FROM unnest($1::bigint[], $2::text[], $3::uuid[], $4::integer[], $5::text[], $6::integer[], $7::integer[], $8::text[],
                $9::text[], $10::timestamptz[])
         AS a(delivery_id, event_id, endpoint_id, attempt, outcome, status_code, latency_ms, error, snippet, started_at)
   WHERE NOT EXISTS (SELECT 1 FROM webhook_attempts w
                      WHERE w.event_id = a.event_id AND w.delivery_id = a.delivery_id AND w.attempt = a.attempt)
   ORDER BY a.delivery_id`;

/**
 * Settles the deliveries whose attempts were recorded ($1 ids, $2 lease tokens, $3 succeeded,
 * $4 ms until the next attempt of a failed one, null: the schedule is used up, $5 the error),
 * only those whose lease token is still this dispatcher's; returns those, with whether a replay
 * was asked for while the attempt was in flight (shared/webhooks/endpoint-deliveries.ts). Such a
 * delivery is queued again whatever the outcome: Pending, due now, a new round, the error kept
 * (null after a success). Else a success is Succeeded; a failure Pending again after $4 ms, or
 * Failed when $4 is null. The lease ends either way.
 */
export const settleDeliveries = `
  WITH mine AS (
    SELECT w.id, w.replay_requested AS replayed, o.succeeded, o.retry_ms, o.error
      FROM webhook_deliveries w
      JOIN unnest($1::bigint[], $2::uuid[], $3::boolean[], $4::integer[], $5::text[]) AS o(id, token, succeeded, retry_ms, error)
        ON w.id = o.id AND w.lease_token = o.token
     ORDER BY w.id FOR UPDATE OF w
  )
  UPDATE webhook_deliveries d
     SET status = CASE WHEN m.replayed OR (NOT m.succeeded AND m.retry_ms IS NOT NULL) THEN 'Pending'
                       WHEN m.succeeded THEN 'Succeeded' ELSE 'Failed' END,
         next_attempt_at = CASE WHEN m.replayed THEN now()
                                WHEN NOT m.succeeded AND m.retry_ms IS NOT NULL THEN now() + m.retry_ms * interval '1 millisecond'
                                ELSE d.next_attempt_at END,
         round_attempts = CASE WHEN m.replayed THEN 0 ELSE d.round_attempts END,
         replay_requested = false,
         completed_at = CASE WHEN NOT m.replayed AND (m.succeeded OR m.retry_ms IS NULL) THEN now() ELSE d.completed_at END,
         lease_until = NULL, lease_token = NULL,
         last_error = CASE WHEN m.succeeded AND NOT m.replayed THEN NULL ELSE m.error END,
         updated_at = now()
    FROM mine m
   WHERE d.id = m.id
  RETURNING d.id, m.replayed`;

/**
 * The endpoints' failures and breakers ($1 ids), locked in id order until the outcomes are
 * recorded. FOR NO KEY UPDATE, the lock the update takes anyway: it does not wait for (nor hold
 * up) transactions that insert deliveries to these endpoints (their foreign key's FOR KEY SHARE),
 * such as an import raising events for many endpoints in one transaction; FOR UPDATE did, and with
 * several endpoints locked in one transaction that was a deadlock (seen in bench:webhooks).
 */
export const lockEndpointsHealth = `
  SELECT id, consecutive_failures, breaker_trips, recent_failures_mask, recent_attempts, breaker_opened_at IS NOT NULL AS open,
         breaker_probe_at <= now() AS probe_due
    FROM webhook_endpoints WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE`;

/**
 * The endpoints' health after their outcomes (breaker.ts afterOutcomes), one row each: $1 ids,
 * $2 failures in a row, $3 the last attempts' outcomes as a bit mask (breaker.ts), $4 how many
 * it holds, $5 opens in a row; $6 breaker_opened_at: 0 kept, 1 cleared (closed), 2 now (opened
 * in this batch), 3 now unless already set; $7 breaker_probe_at: null kept, -1 cleared, else now
 * + $7 ms; $8 some attempt succeeded, $9 some failed, $10 the last one failed (last_success_at
 * then a microsecond before last_failure_at: the endpoint does not count as answering).
 */
export const updateEndpointsHealth = `
  UPDATE webhook_endpoints ep
     SET consecutive_failures = u.failures, recent_failures_mask = u.mask, recent_attempts = u.attempts,
         breaker_trips = u.trips,
         breaker_opened_at = CASE u.opened WHEN 0 THEN ep.breaker_opened_at WHEN 1 THEN NULL WHEN 2 THEN now()
                                           ELSE coalesce(ep.breaker_opened_at, now()) END,
         breaker_probe_at = CASE WHEN u.probe_ms IS NULL THEN ep.breaker_probe_at WHEN u.probe_ms < 0 THEN NULL
                                 ELSE now() + u.probe_ms * interval '1 millisecond' END,
         last_success_at = CASE WHEN NOT u.succeeded THEN ep.last_success_at
                                WHEN u.failed_last THEN now() - interval '1 microsecond' ELSE now() END,
         last_failure_at = CASE WHEN u.failed THEN now() ELSE ep.last_failure_at END,
         updated_at = now()
    FROM unnest($1::uuid[], $2::integer[], $3::bigint[], $4::integer[], $5::integer[], $6::integer[], $7::integer[],
                $8::boolean[], $9::boolean[], $10::boolean[])
         AS u(id, failures, mask, attempts, trips, opened, probe_ms, succeeded, failed, failed_last)
   WHERE ep.id = u.id`;

/** After deliveries gave up: their endpoints ($1 ids, $2 reasons) disabled (once); returns those disabled now. */
export const disableEndpoints = `
  UPDATE webhook_endpoints ep SET status = 'Disabled', disabled_reason = u.reason, disabled_at = now(), updated_at = now()
    FROM unnest($1::uuid[], $2::text[]) AS u(id, reason)
   WHERE ep.id = u.id AND ep.status = 'Active'
  RETURNING ep.id, ep.client_id, ep.url`;
