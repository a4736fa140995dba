-- +goose Up
-- begin sql/src/admin/grant_ingest_signed.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.grant_ingest_signed is the grant set for a role exposed to the
-- internet (PostgREST, an edge function): webhooks.ingest_signed and nothing
-- else, so nothing reaches webhooks.events without a valid signature. No
-- ingest_webhook (it trusts its caller's verification), no expect (its
-- status_url decides what backfill fetches). The function runs with the
-- owner's rights: the role needs no privilege on any table and cannot read a
-- payload or a secret. Call it as the owner of schema webhooks.
CREATE OR REPLACE FUNCTION webhooks.grant_ingest_signed(role text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    PERFORM webhooks._require_role(grant_ingest_signed.role);
    EXECUTE format('GRANT USAGE ON SCHEMA webhooks TO %I', grant_ingest_signed.role);
    EXECUTE format('GRANT EXECUTE ON FUNCTION webhooks.ingest_signed(text, jsonb, bytea, text) TO %I',
                   grant_ingest_signed.role);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.grant_ingest_signed(text) IS
  'For roles exposed to the internet (PostgREST, edge functions): lets role call ingest_signed and nothing else, '
  'so it cannot store an event without a valid signature (no ingest_webhook, no expect, no table access). Run as '
  'the owner of schema webhooks.';
REVOKE EXECUTE ON FUNCTION webhooks.grant_ingest_signed(text) FROM PUBLIC;
-- end sql/src/admin/grant_ingest_signed.sql
