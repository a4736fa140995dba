-- +goose Up
-- begin sql/src/process/pause.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.pause(provider, reason) stops claim() from handing out the
-- provider's events (they stay pending, deliveries are still stored) until
-- resume(provider). Audited in webhooks.provider_pauses. Pausing a paused
-- provider updates its reason. Returns true when it was not paused before.
CREATE OR REPLACE FUNCTION webhooks.pause(provider text, reason text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    v_new boolean;
BEGIN
    PERFORM webhooks._require_text('provider', pause.provider, 64);
    IF pause.reason IS NULL OR btrim(pause.reason, E' \t\r\n') = '' THEN
        RAISE EXCEPTION 'pginbox: reason must not be %', CASE WHEN pause.reason IS NULL THEN 'null' ELSE 'blank' END
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Say why the provider is paused; it is shown on the console.';
    END IF;
    PERFORM webhooks._require_text('reason', pause.reason, 1000);
    INSERT INTO webhooks.paused_providers AS p (provider, reason)
    VALUES (pause.provider, pause.reason)
    ON CONFLICT ON CONSTRAINT paused_providers_pkey
        DO UPDATE SET reason = EXCLUDED.reason
    RETURNING (xmax = 0) INTO v_new;
    INSERT INTO webhooks.provider_pauses (provider, action, reason)
    VALUES (pause.provider, 'pause', pause.reason);
    RETURN v_new;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.pause(text, text) FROM PUBLIC;
COMMENT ON FUNCTION webhooks.pause(text, text) IS
  'Pauses processing of a provider: claim() leaves its events pending until resume(provider); ingest goes on. '
  'Audited in webhooks.provider_pauses. Returns true if it was not paused already. Raises 22023 on a blank reason.';
-- end sql/src/process/pause.sql
