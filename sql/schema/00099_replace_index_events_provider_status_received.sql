-- +goose Up
-- The console's per-provider list index leads with status instead of
-- provider: (status, provider, received_at, id) serves the console's
-- "status = s AND provider = p ORDER BY received_at DESC, id DESC" pages
-- exactly as (provider, status, received_at, id) did, and no longer offers
-- the planner a second index on "provider = p" beside the unique key.
--
-- With two such indexes, a look-up by (provider, external_id) costs the
-- same through either while the table's statistics say it is small (a new
-- install, a bulk load inside one transaction), and the planner's tie went
-- to the newer index: ingest_webhook()'s look-up then read every row of the
-- provider and filtered on external_id, so each delivery cost more than the
-- one before it (100,000 deliveries in one statement took minutes). Now the
-- unique key is the only index that look-up can use
-- (TestIngestLooksUpByTheUniqueKey).
--
-- On a large table, build the new index CONCURRENTLY before migrating
-- (docs/operations.md, "Upgrading"); the migration then finds it.
CREATE INDEX IF NOT EXISTS events_status_provider_received_idx ON webhooks.events (status, provider, received_at, id);
DROP INDEX IF EXISTS webhooks.events_provider_status_received_idx;
