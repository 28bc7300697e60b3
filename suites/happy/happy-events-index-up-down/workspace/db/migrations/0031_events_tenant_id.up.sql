-- migrate:no-transaction
ALTER TABLE events ADD COLUMN tenant_id bigint;
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_kind_idx ON events (kind);
