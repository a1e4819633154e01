-- Up Migration
-- The record a webhook event is about (issue 51): the import job, field job, material usage or
-- appointment request whose id its data names (src/shared/webhooks/outbox.ts, subjectKeys; a test
-- event's endpoint), written by the outbox beside the body, so that `admin trace` finds a record's
-- events by an index (0033) instead of parsing the body of every event of the client since the
-- record was made.
-- Nullable without a default: adding it rewrites and scans nothing (an instant catalog change under
-- a brief lock of webhook_events). NULL for the events recorded before, and for those the previous
-- release records during a rolling upgrade (its insert does not name the column); the trace still
-- finds those by their body, reading only events without a subject (0033's partial index).
-- Not backfilled: an UPDATE of every event would write a new version of every row and of its
-- index entries (the table's size again in WAL, then as much dead space to vacuum) in one
-- transaction that holds each row against the event feed's sequencing (which updates the same
-- rows) until it commits, while the events it would fill are pruned within EVENT_RETENTION_HOURS
-- anyway and the previous release keeps writing NULLs until the roll ends, so the fallback is
-- needed either way (such an UPDATE took 23 s for 310,000 events at load 15, docs/benchmarks.md).
-- A migration of its own so that ALTER TABLE's exclusive lock (which holds off reads too) ends at
-- once: taken in 0033's transaction, it would be held while the indexes build.
ALTER TABLE webhook_events ADD COLUMN subject_id text;

-- Down Migration
ALTER TABLE webhook_events DROP COLUMN subject_id;
