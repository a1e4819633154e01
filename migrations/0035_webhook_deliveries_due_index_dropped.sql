-- Up Migration
-- Issue 50: every index on webhook_deliveries that holds due deliveries is endpoint-first. The
-- dispatcher reads due deliveries per endpoint (its claim, the chaining of a success, the count
-- of attempts in flight); webhook_deliveries_due_idx (next_attempt_at, all endpoints) served none
-- of them well, yet the planner chose it for all of them whenever its statistics were taken while
-- the queue was empty, as a server's statistics nearly always are: a partial index counted empty
-- at its last vacuum is costed as empty however many due rows an outage adds (a table of millions
-- of finished deliveries is not re-analysed for a few thousand). Each of a thousand endpoints then
-- walked every due delivery: the claim took 0.4-1.1 s, and a healthy tenant's throughput fell to
-- a quarter or a third of quiet's (bench:webhooks, docs/benchmarks.md).
-- webhook_deliveries_endpoint_due_idx holds the same rows and serves the scrape's count of all due
-- deliveries as well. No statement of this release or 0.1.0 needs the dropped index (0.1.0's
-- claim reads per endpoint too); a roll back keeps it dropped. DROP INDEX takes the table's lock
-- for a moment (lock_timeout, migrate.ts).
DROP INDEX webhook_deliveries_due_idx;

-- Down Migration
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at)
  WHERE status IN ('Pending', 'Delivering');
