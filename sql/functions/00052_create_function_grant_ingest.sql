-- +goose Up
-- +goose StatementBegin
-- webhooks.grant_ingest lets a role receive webhooks and nothing more: store
-- deliveries (ingest_webhook, ingest_signed) and record what should arrive
-- (expect). The functions run with the owner's rights, so the role needs no
-- privilege on any table: it cannot read a payload, claim, or see a secret.
-- Call it as the owner of schema webhooks (no superuser needed).
CREATE OR REPLACE FUNCTION webhooks.grant_ingest(role text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
    PERFORM webhooks._require_role(grant_ingest.role);
    EXECUTE format('GRANT USAGE ON SCHEMA webhooks TO %I', grant_ingest.role);
    EXECUTE format('GRANT EXECUTE ON FUNCTION
        webhooks.ingest_webhook(text, text, text, jsonb, text, boolean),
        webhooks.ingest_signed(text, jsonb, bytea, timestamptz),
        webhooks.expect(text, text, timestamptz, text)
        TO %I', grant_ingest.role);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.grant_ingest(text) IS
  'Lets role call ingest_webhook, ingest_signed and expect, and nothing else (no table access: payloads stay '
  'unreadable, no claiming). Run as the owner of schema webhooks.';
REVOKE EXECUTE ON FUNCTION webhooks.grant_ingest(text) FROM PUBLIC;
