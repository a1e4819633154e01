// Statements of the webhook dispatcher, kept apart from the logic.

/**
 * Claims up to $1 due deliveries of Active endpoints for $2 ms: Pending ones whose time has come
 * and Delivering ones whose lease expired (their dispatcher died mid-attempt). SKIP LOCKED lets
 * several dispatchers claim side by side; the new lease_token tells whether a dispatcher still
 * holds the delivery when it begins the attempt and when it records the outcome. $3: ids this
 * dispatcher is still working on (an outcome waiting for PostgreSQL to come back), never its own
 * to take again. Returns what the attempt needs.
 */
export const claimDeliveries = `
  WITH due AS (
    SELECT d.id FROM webhook_deliveries d
     WHERE d.status IN ('Pending', 'Delivering')
       AND d.next_attempt_at <= now()
       AND (d.lease_until IS NULL OR d.lease_until < now())
       AND d.id <> ALL($3::bigint[])
       AND EXISTS (SELECT 1 FROM webhook_endpoints ep WHERE ep.id = d.endpoint_id AND ep.status = 'Active')
     ORDER BY d.next_attempt_at
     LIMIT $1
     FOR UPDATE OF d SKIP LOCKED
  ), claimed AS (
    UPDATE webhook_deliveries d
       SET status = 'Delivering', lease_until = now() + $2 * interval '1 millisecond', lease_token = gen_random_uuid(),
           attempt_count = d.attempt_count + 1, round_attempts = d.round_attempts + 1, updated_at = now()
      FROM due WHERE d.id = due.id
    RETURNING d.id, d.event_id, d.endpoint_id, d.attempt_count, d.round_attempts, d.lease_token
  )
  SELECT c.id, c.event_id, c.endpoint_id, c.attempt_count, c.round_attempts, c.lease_token,
         e.type, e.body, ep.url, ep.secret,
         CASE WHEN ep.previous_secret_expires_at > now() THEN ep.previous_secret END AS previous_secret
    FROM claimed c
    JOIN webhook_events e ON e.id = c.event_id
    JOIN webhook_endpoints ep ON ep.id = c.endpoint_id`;

/**
 * Restarts the lease ($3 ms) when the attempt begins, only while the lease token ($2) is still
 * this dispatcher's: the lease covers the attempt, not the wait since the claim. No row: another
 * dispatcher claimed the delivery meanwhile (or finished it), so this one must not send.
 */
export const beginAttempt = `
  UPDATE webhook_deliveries SET lease_until = now() + $3 * interval '1 millisecond', updated_at = now()
   WHERE id = $1 AND lease_token = $2`;

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

export const endpointSucceeded = `
  UPDATE webhook_endpoints SET consecutive_failures = 0, last_success_at = now(), updated_at = now() WHERE id = $1`;

export const endpointFailed = `
  UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1, last_failure_at = now(),
                               updated_at = now()
   WHERE id = $1`;

/** After a delivery gave up: the endpoint is disabled (once) with the reason; returns a row only then. */
export const disableEndpoint = `
  UPDATE webhook_endpoints SET status = 'Disabled', disabled_reason = $2, disabled_at = now(), updated_at = now()
   WHERE id = $1 AND status = 'Active'
  RETURNING id, client_id, url`;
