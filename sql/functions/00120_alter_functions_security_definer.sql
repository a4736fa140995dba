-- +goose Up
-- Least privilege: the public functions run with the owner's rights and a
-- fixed search_path, so a role may be allowed to call them (see grant_ingest,
-- grant_worker, grant_reader) without any privilege on the tables behind
-- them: an ingest role can store deliveries without being able to read a
-- single payload. Every object the bodies use is schema-qualified; the fixed
-- search_path (pg_catalog first, pg_temp last) keeps a caller's own objects
-- from being picked up instead.
--
-- ALTER FUNCTION changes only these attributes; the bodies are unchanged.
ALTER FUNCTION webhooks.ingest_webhook(text, text, text, jsonb, text, boolean) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.claim(text, integer, interval) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.complete(bigint, text, integer) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.fail(bigint, text, integer, text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.heartbeat(bigint, text, integer, interval) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.release(bigint, text, integer) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.replay(bigint, text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.prune(interval, interval, integer, bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.rescue_leases(integer) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.expect(text, text, timestamptz, text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.tombstone(text, text, text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.find_sequence_gaps(text, bigint, bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.postpone_expectation(text, text, interval, interval) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.reconcile(text, integer, integer, interval, boolean) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.refresh_view(text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.refresh_views() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION webhooks.run_checks() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

-- +goose Down
ALTER FUNCTION webhooks.ingest_webhook(text, text, text, jsonb, text, boolean) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.claim(text, integer, interval) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.complete(bigint, text, integer) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.fail(bigint, text, integer, text) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.heartbeat(bigint, text, integer, interval) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.release(bigint, text, integer) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.replay(bigint, text) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.prune(interval, interval, integer, bigint) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.rescue_leases(integer) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.expect(text, text, timestamptz, text) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.tombstone(text, text, text) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.find_sequence_gaps(text, bigint, bigint) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.postpone_expectation(text, text, interval, interval) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.reconcile(text, integer, integer, interval, boolean) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.refresh_view(text) SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.refresh_views() SECURITY INVOKER RESET search_path;
ALTER FUNCTION webhooks.run_checks() SECURITY INVOKER RESET search_path;
