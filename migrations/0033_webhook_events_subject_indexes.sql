-- Up Migration
-- `admin trace` looks up a record's webhook events by subject_id (0032): webhook_events_subject_idx.
-- Events without one (recorded before 0032, or by the previous release during a rolling upgrade)
-- it finds by their body, since the record was made, from webhook_events_unsubjected_idx: partial
-- on subject_id IS NULL, so that lookup never reads the events this release records; it holds every
-- event when built and empties as retention prunes them (EVENT_RETENTION_HOURS), apart from what
-- the previous release writes while it still runs.
-- Plain CREATE INDEX, as 0030 and 0031 (a migration runs in a transaction, where CONCURRENTLY cannot):
-- each build reads the whole table and holds off writes to webhook_events while it does (the
-- applies that raise events wait at their event's insert, as do the event feed's numbering and
-- retention's deletes); reads go on. Both took 1.8 s for 310,000 events (242 MB) on 2 shared cores
-- at load 17 (0.7 s and 1.1 s; about 6 s per million events there).
-- The previous release neither needs nor minds them (its inserts leave subject_id NULL).
CREATE INDEX webhook_events_subject_idx ON webhook_events (client_id, subject_id) WHERE subject_id IS NOT NULL;
CREATE INDEX webhook_events_unsubjected_idx ON webhook_events (client_id, created_at) WHERE subject_id IS NULL;

-- Down Migration
DROP INDEX webhook_events_subject_idx, webhook_events_unsubjected_idx;
