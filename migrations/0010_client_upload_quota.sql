-- Up Migration
-- A client's own upload quota (body bytes per second per gateway replica); NULL: the gateway's
-- UPLOAD_BYTES_PER_SECOND applies (src/gateway/rate-limit/upload-quota.ts).
ALTER TABLE integration_clients
  ADD COLUMN upload_bytes_per_second integer CHECK (upload_bytes_per_second BETWEEN 1024 AND 1073741824);

-- Down Migration
ALTER TABLE integration_clients DROP COLUMN upload_bytes_per_second;
