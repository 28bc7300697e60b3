-- migrate:no-transaction
DROP INDEX CONCURRENTLY IF EXISTS events_kind_idx;
ALTER TABLE events DROP COLUMN tenant_id;
