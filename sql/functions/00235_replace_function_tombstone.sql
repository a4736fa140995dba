-- +goose Up
-- begin sql/src/recover/tombstone.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.tombstone records that a missing id is known never to arrive (e.g.
-- the provider answered 404 for it), so find_gaps() and find_sequence_gaps()
-- stop reporting it.
--
-- Idempotent: a second call for the same id changes nothing (the first
-- reason and created_at are kept). When the event is already there, nothing
-- is missing and nothing is written. If the event arrives after the
-- tombstone after all, reconcile() marks the tombstone resolved.
CREATE OR REPLACE FUNCTION webhooks.tombstone(provider text, external_id text, reason text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM webhooks._require_text('provider', tombstone.provider, 64);
    PERFORM webhooks._require_text('external_id', tombstone.external_id, 255);
    PERFORM webhooks._require_text('reason', tombstone.reason, 1000);

    INSERT INTO webhooks.tombstones (provider, external_id, reason)
    SELECT tombstone.provider, tombstone.external_id, tombstone.reason
    WHERE NOT EXISTS (
        SELECT FROM webhooks.keys AS k
        WHERE k.provider = tombstone.provider AND k.external_id = tombstone.external_id)
    ON CONFLICT ON CONSTRAINT tombstones_pkey DO NOTHING;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.tombstone(text, text, text) IS
  'Records that (provider, external_id) is known never to arrive, with a reason; gap queries skip it. '
  'Idempotent (the first reason is kept); does nothing when the event is already there.';
REVOKE EXECUTE ON FUNCTION webhooks.tombstone(text, text, text) FROM PUBLIC;
-- end sql/src/recover/tombstone.sql
