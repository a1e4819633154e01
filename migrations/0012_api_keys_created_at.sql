-- Up Migration
-- Each gateway replica refreshes its set of known key hashes (src/gateway/auth/known-keys.ts) up
-- to ten times a second while unknown keys arrive, reading only keys created in the last minutes:
-- an index keeps that read from scanning every key.
CREATE INDEX api_keys_created_at_idx ON api_keys (created_at);

-- Down Migration
DROP INDEX api_keys_created_at_idx;
