-- +goose Up
-- begin sql/src/admin/grant_ingest.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.grant_ingest is the grant set for trusted backends that verify
-- signatures themselves (the runner, a service of your own): store deliveries
-- (ingest_webhook, or many at once with ingest_batch) and record what should
-- arrive (expect). ingest_webhook
-- stores whatever it is given, so never give this set to a role exposed to
-- the internet: that is webhooks.grant_ingest_signed. The functions run with
-- the owner's rights, so the role needs no privilege on any table: it cannot
-- read a payload, claim, or see a secret. Call it as the owner of schema
-- webhooks (no superuser needed).
CREATE OR REPLACE FUNCTION webhooks.grant_ingest(role text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    PERFORM webhooks._require_role(grant_ingest.role);
    EXECUTE format('GRANT USAGE ON SCHEMA webhooks TO %I', grant_ingest.role);
    EXECUTE format('GRANT EXECUTE ON FUNCTION
        webhooks.ingest_webhook(text, text, text, jsonb, text, boolean, bytea, text),
        webhooks.ingest_batch(text[], text[], text[], jsonb[], text[], bytea[], text[], boolean),
        webhooks.expect(text, text, timestamptz, text)
        TO %I', grant_ingest.role);
END;
$$;
-- +goose StatementEnd

REVOKE EXECUTE ON FUNCTION webhooks.grant_ingest(text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.grant_ingest(text) IS
  'For trusted backends that verify signatures themselves: lets role call ingest_webhook, ingest_batch and expect, and nothing '
  'else (no table access: payloads stay unreadable, no claiming). Not for roles exposed to the internet: use '
  'grant_ingest_signed. Run as the owner of schema webhooks.';
-- end sql/src/admin/grant_ingest.sql
