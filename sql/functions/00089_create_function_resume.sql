-- +goose Up
-- begin sql/src/process/resume.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.resume(provider) undoes pause(): claim() hands the provider's
-- events out again. Audited. Returns false if it was not paused.
CREATE OR REPLACE FUNCTION webhooks.resume(provider text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
BEGIN
    PERFORM webhooks._require_text('provider', resume.provider, 64);
    DELETE FROM webhooks.paused_providers AS p WHERE p.provider = resume.provider;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO webhooks.provider_pauses (provider, action) VALUES (resume.provider, 'resume');
    PERFORM pg_catalog.pg_notify('webhooks_events', 'resume');
    RETURN true;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.resume(text) FROM PUBLIC;
COMMENT ON FUNCTION webhooks.resume(text) IS
  'Resumes processing of a paused provider (claim() hands its events out again) and wakes the workers; audited '
  'in webhooks.provider_pauses. Returns false if the provider was not paused.';
-- end sql/src/process/resume.sql
