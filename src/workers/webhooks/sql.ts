// Statements of the webhook dispatcher, kept apart from the logic.

/** Serialises claims across dispatchers (pg_advisory_xact_lock): see claimDeliveries. */
export const claimLockId = 7_239_014_561;

/**
 * Claims due deliveries fairly, for $2 ms each. Due: Pending ones whose time has come and
 * Delivering ones whose lease expired (their dispatcher died mid-attempt), of Active endpoints
 * whose breaker lets something through. At most $1 (this dispatcher's free slots: its hard cap).
 *
 * - Per endpoint: at most its share in flight at once, across all dispatchers (max_in_flight, or
 *   $3 where unset, never above $4; one while its breaker is half open, probing), oldest due first.
 * - Endpoints that answer (issue 50): its last attempt succeeded, its breaker is closed, and it is
 *   not among $11 (endpoints with a slow request at this dispatcher). Deliveries to any other
 *   endpoint take at most $10 of the slots (the free ones beyond the reserve, dispatcher-slots.ts):
 *   at most $10 such endpoints are looked at, those of the tenants that used least first; with
 *   $10 = 0, none.
 * - Per tenant, as this dispatcher knows them ($6 ids, $7 slots held here, $8 slot-ms used
 *   lately, $9 typical attempt ms; $12 for a tenant not listed): at most $5 − held slots; its
 *   deliveries one endpoint after another (the first due of every endpoint, then the second …),
 *   its n-th ordered at used + (n − 1) × typical (start-time fair queueing by slot time).
 * - Across tenants: by that order, least used first; the oldest due breaks a tie.
 *
 * Runs after pg_advisory_xact_lock(claimLockId) in its transaction: one claim at a time, so the
 * counts of attempts in flight it reads cannot be raced by another dispatcher's claim. FOR UPDATE
 * SKIP LOCKED still skips a delivery whose outcome is being recorded right now. $13: ids this
 * dispatcher is still working on (an outcome waiting for PostgreSQL to come back), never its own
 * to take again. Returns what the attempt needs, and whether its endpoint counted as answering.
 */
export const claimDeliveries = `
  WITH tenant AS (
    SELECT * FROM unnest($6::uuid[], $7::int[], $8::float8[], $9::float8[]) AS t(tenant_id, held, used_ms, cost_ms)
  ), endpoint_health AS (
    SELECT ep.id, ep.tenant_id, ep.max_in_flight, ep.breaker_opened_at,
           ep.breaker_opened_at IS NULL AND ep.last_success_at IS NOT NULL
             AND (ep.last_failure_at IS NULL OR ep.last_success_at >= ep.last_failure_at)
             AND ep.id <> ALL($11::uuid[]) AS answering
      FROM webhook_endpoints ep
     WHERE ep.status = 'Active'
       AND (ep.breaker_probe_at IS NULL OR ep.breaker_probe_at <= now())
       -- a tenant whose share is full here is not looked at further
       AND $5 > coalesce((SELECT t.held FROM tenant t WHERE t.tenant_id = ep.tenant_id), 0)
  ), endpoint_due AS (
    SELECT h.id, h.tenant_id, h.answering, h.max_in_flight, h.breaker_opened_at,
           coalesce((SELECT t.used_ms FROM tenant t WHERE t.tenant_id = h.tenant_id), 0) AS used_ms,
           coalesce((SELECT t.cost_ms FROM tenant t WHERE t.tenant_id = h.tenant_id), $12) AS cost_ms,
           (SELECT min(d.next_attempt_at) FROM webhook_deliveries d
             WHERE d.endpoint_id = h.id AND d.status IN ('Pending', 'Delivering') AND d.next_attempt_at <= now()
               AND (d.lease_until IS NULL OR d.lease_until < now())) AS oldest_due
      FROM endpoint_health h
     WHERE h.answering OR $10 > 0
  ), endpoint_room AS (
    SELECT h.id, h.tenant_id, h.answering, h.used_ms, h.cost_ms, h.oldest_due,
           CASE WHEN h.breaker_opened_at IS NULL THEN least(coalesce(h.max_in_flight, $3), $4) ELSE 1 END
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
      ORDER BY used_ms + (tenant_rank - 1) * cost_ms, oldest_due, id LIMIT $10)
  ), candidates AS (
    SELECT c.id, r.tenant_id, r.answering, c.next_attempt_at,
           row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at, c.id) AS endpoint_rank
      FROM endpoint_pick r
     CROSS JOIN LATERAL (
       SELECT d.id, d.endpoint_id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.endpoint_id = r.id AND d.status IN ('Pending', 'Delivering') AND d.next_attempt_at <= now()
          AND (d.lease_until IS NULL OR d.lease_until < now())
          AND d.id <> ALL($13::bigint[])
        ORDER BY d.next_attempt_at, d.id
        LIMIT greatest(r.room, 0)) c
  ), tenant_ranked AS (
    SELECT c.id, c.answering, c.next_attempt_at, t.used_ms, t.cost_ms, $5 - coalesce(t.held, 0) AS tenant_room,
           row_number() OVER (PARTITION BY c.tenant_id ORDER BY c.endpoint_rank, c.next_attempt_at, c.id) AS tenant_rank
      FROM candidates c
      LEFT JOIN tenant t ON t.tenant_id = c.tenant_id
  ), ordered AS (
    SELECT id, answering, next_attempt_at,
           coalesce(used_ms, 0) + (tenant_rank - 1) * coalesce(cost_ms, $12) AS fair_at
      FROM tenant_ranked WHERE tenant_rank <= tenant_room
  ), ranked AS (
    SELECT id, answering, next_attempt_at, fair_at,
           row_number() OVER (PARTITION BY answering ORDER BY fair_at, next_attempt_at, id) AS rank_in_pool
      FROM ordered
  ), picked AS (
    SELECT d.id, p.answering FROM webhook_deliveries d
      JOIN (SELECT id, answering, fair_at, next_attempt_at FROM ranked WHERE answering OR rank_in_pool <= $10
             ORDER BY fair_at, next_attempt_at, id LIMIT $1) p ON p.id = d.id
     WHERE d.status IN ('Pending', 'Delivering') AND (d.lease_until IS NULL OR d.lease_until < now())
       FOR UPDATE OF d SKIP LOCKED
  ), claimed AS (
    UPDATE webhook_deliveries d
       SET status = 'Delivering', lease_until = now() + $2 * interval '1 millisecond', lease_token = gen_random_uuid(),
           updated_at = now() -- the attempt is counted when it begins (beginAttempt), not here
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
 * Restarts the lease ($3 ms) when the attempt begins, only while the lease token ($2) is still
 * this dispatcher's: the lease covers the attempt, not the wait since the claim. No row: another
 * dispatcher claimed the delivery meanwhile (or finished it), so this one must not send. The
 * attempt is counted here, right before it is sent, not at the claim: a claim never sent (its
 * lease lost, its dispatcher killed) uses up nothing of the retry schedule. Returns the counts.
 * A replay asked for since the claim is what this attempt sends: it starts the new round.
 */
export const beginAttempt = `
  UPDATE webhook_deliveries
     SET lease_until = now() + $3 * interval '1 millisecond', attempt_count = attempt_count + 1,
         round_attempts = CASE WHEN replay_requested THEN 1 ELSE round_attempts + 1 END, replay_requested = false,
         updated_at = now()
   WHERE id = $1 AND lease_token = $2
  RETURNING attempt_count, round_attempts`;

/**
 * A replay was asked for while this attempt was in flight (shared/webhooks/endpoint-deliveries.ts):
 * whatever the outcome, the delivery is queued again, due now, a new round ($3 the error, or null).
 * No row: no replay was asked for (or the lease is not this dispatcher's any more).
 */
export const requeueReplayed = `
  UPDATE webhook_deliveries
     SET status = 'Pending', next_attempt_at = now(), round_attempts = 0, replay_requested = false,
         lease_until = NULL, lease_token = NULL, last_error = $3, updated_at = now()
   WHERE id = $1 AND lease_token = $2 AND replay_requested`;

/**
 * Renews the leases ($3 ms from now) of deliveries a dispatcher holds ($1 ids, $2 their lease
 * tokens), while they are still its own (lease.ts). Rows locked now are skipped: the recording
 * of an outcome holds that lock (and a claim skips them too), so renewing never waits for it.
 */
export const renewLeases = `
  UPDATE webhook_deliveries d SET lease_until = now() + $3 * interval '1 millisecond'
    FROM (SELECT w.id FROM webhook_deliveries w
            JOIN unnest($1::bigint[], $2::uuid[]) AS held(id, token) ON w.id = held.id AND w.lease_token = held.token
             FOR UPDATE OF w SKIP LOCKED) mine
   WHERE d.id = mine.id`;

/**
 * Records one attempt; at most once per delivery and attempt number, so recording again after a
 * COMMIT whose answer was lost (the connection died) does not list the attempt twice.
 */
export const insertAttempt = `
  INSERT INTO webhook_attempts (delivery_id, tenant_id, event_id, endpoint_id, attempt, outcome, status_code, latency_ms,
                                error, response_snippet, started_at)
  SELECT $1::bigint, (SELECT tenant_id FROM webhook_deliveries WHERE id = $1::bigint), $2::text, $3::uuid, $4::integer,
         $5::text, $6::integer, $7::integer, $8::text, $9::text, $10::timestamptz
   WHERE NOT EXISTS (SELECT 1 FROM webhook_attempts WHERE event_id = $2 AND delivery_id = $1 AND attempt = $4)`;

/** $1 id, $2 lease token; only while this dispatcher still holds the lease. */
export const markSucceeded = `
  UPDATE webhook_deliveries
     SET status = 'Succeeded', completed_at = now(), lease_until = NULL, lease_token = NULL, last_error = NULL,
         updated_at = now()
   WHERE id = $1 AND lease_token = $2`;

/** $3 delay in ms before the next attempt, $4 the error. */
export const scheduleRetry = `
  UPDATE webhook_deliveries
     SET status = 'Pending', next_attempt_at = now() + $3 * interval '1 millisecond', lease_until = NULL,
         lease_token = NULL, last_error = $4, updated_at = now()
   WHERE id = $1 AND lease_token = $2`;

export const markGaveUp = `
  UPDATE webhook_deliveries
     SET status = 'Failed', completed_at = now(), lease_until = NULL, lease_token = NULL, last_error = $3,
         updated_at = now()
   WHERE id = $1 AND lease_token = $2`;

// The breaker's window (breaker.ts): the last $2 attempts' outcomes as a bit mask (bit 0 the
// newest, 1 = failed) and how many it holds (at most $2). Shifted by every recorded outcome.
const pushOutcome = (failed: 0 | 1) => `((recent_failures_mask << 1) | ${failed}) & ((1::bigint << $2::integer) - 1)`;

/**
 * A success resets the failures and closes the breaker; $2 the window. When the breaker was open
 * (this was its probe), the window starts afresh: the failures that opened it do not count again.
 */
export const endpointSucceeded = `
  UPDATE webhook_endpoints
     SET consecutive_failures = 0, last_success_at = now(), breaker_opened_at = NULL, breaker_probe_at = NULL,
         breaker_trips = 0, updated_at = now(),
         recent_failures_mask = CASE WHEN breaker_opened_at IS NULL THEN ${pushOutcome(0)} ELSE 0 END,
         recent_attempts = CASE WHEN breaker_opened_at IS NULL THEN least(recent_attempts + 1, $2::integer) ELSE 0 END
   WHERE id = $1`;

/** The endpoint's failures and breaker, locked until the outcome is recorded (breaker.ts decides what changes). */
export const lockEndpointHealth = `
  SELECT consecutive_failures, breaker_trips, recent_failures_mask, recent_attempts, breaker_opened_at IS NOT NULL AS open,
         breaker_probe_at <= now() AS probe_due
    FROM webhook_endpoints WHERE id = $1 FOR UPDATE`;

/**
 * One more failure, $2 the window; with $3 (ms), the breaker opens (again) until now + $3, $4 its
 * opens in a row.
 */
export const endpointFailed = `
  UPDATE webhook_endpoints
     SET consecutive_failures = consecutive_failures + 1, last_failure_at = now(),
         recent_failures_mask = ${pushOutcome(1)}, recent_attempts = least(recent_attempts + 1, $2::integer),
         breaker_opened_at = CASE WHEN $3::integer IS NULL THEN breaker_opened_at ELSE coalesce(breaker_opened_at, now()) END,
         breaker_probe_at = CASE WHEN $3::integer IS NULL THEN breaker_probe_at ELSE now() + $3 * interval '1 millisecond' END,
         breaker_trips = coalesce($4, breaker_trips), updated_at = now()
   WHERE id = $1`;

/** After a delivery gave up: the endpoint is disabled (once) with the reason; returns a row only then. */
export const disableEndpoint = `
  UPDATE webhook_endpoints SET status = 'Disabled', disabled_reason = $2, disabled_at = now(), updated_at = now()
   WHERE id = $1 AND status = 'Active'
  RETURNING id, client_id, url`;
