-- Up Migration
-- An endpoint's failed attempts counted by an index of those alone (issue 49): the endpoint list
-- and `webhook list` count them per endpoint on every request, and an endpoint that mostly
-- succeeds kept every success of the retention window in that count's way.
CREATE INDEX webhook_attempts_endpoint_failed_idx ON webhook_attempts (endpoint_id) WHERE outcome <> 'Succeeded';
