-- +goose Up
-- begin sql/src/order/_ordered_providers.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- webhooks._ordered_providers is the list of providers with ordering
-- (webhooks.ordering), published as a constant so that ingest_webhook(),
-- ingest_batch() and _mark_processed() can tell an ordered provider from
-- one without ordering without reading webhooks.ordering on every call.
-- That read was a statement of its own in every delivery, with two more
-- relations to lock (the table and its primary key).
--
-- The body below is the one for no ordered provider. _ordering_publish(),
-- the trigger on webhooks.ordering, writes it again (CREATE OR REPLACE,
-- in the transaction that changed webhooks.ordering) whenever a provider is
-- added or removed. The planner inlines it as a constant, and replacing it
-- invalidates every cached plan that used it, so a session sees the new list
-- from its next transaction on, as it would a committed row.
--
-- A migration written from this file (make sql-migrations) replaces that
-- published list with the empty one, and ingest would stop ordering every
-- provider until the next set_ordering(). So this file publishes the list
-- again from webhooks.ordering (the UPDATE at its end), in the migration's
-- transaction, holding from the start the lock set_ordering(),
-- clear_ordering() and the trigger take: no session sees the empty list, and
-- no other publish runs in between (TestOrderingSurvivesRegeneratedMigrations).
LOCK TABLE webhooks.ordering IN SHARE ROW EXCLUSIVE MODE;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks._ordered_providers()
RETURNS text[]
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $body$SELECT '{}'::text[]$body$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._ordered_providers() IS
  'Private: the providers in webhooks.ordering, as a constant array rewritten by _ordering_publish() whenever one '
  'is added or removed; read by ingest instead of the table.';
REVOKE EXECUTE ON FUNCTION webhooks._ordered_providers() FROM PUBLIC;

-- Publish what webhooks.ordering holds: an UPDATE of every row (a small
-- table) hands them all to the trigger as renamed to themselves. Before the
-- trigger exists (the first migration of this file) it publishes nothing;
-- _ordering_publish's file publishes once it has created the trigger.
UPDATE webhooks.ordering SET provider = provider;
-- end sql/src/order/_ordered_providers.sql
