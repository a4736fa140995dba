-- +goose Up
-- begin sql/src/process/resume.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.resume(provider) undoes pause(): claim() hands the provider's
-- events out again. Audited. Returns false if it was not paused.
-- actor, when given, names who asked (the console passes the operator) and
-- is recorded in the audit's by_role; without it, the session's role.
CREATE OR REPLACE FUNCTION webhooks.resume(provider text, actor text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    v_by text := coalesce(nullif(btrim(resume.actor, E' \t\r\n'), ''), session_user);
BEGIN
    PERFORM webhooks._require_text('provider', resume.provider, 64);
    PERFORM webhooks._require_text('actor', v_by, 200);
    DELETE FROM webhooks.paused_providers AS p WHERE p.provider = resume.provider;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO webhooks.provider_pauses (provider, action, by_role) VALUES (resume.provider, 'resume', v_by);
    PERFORM pg_catalog.pg_notify('webhooks_events', 'resume');
    RETURN true;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.resume(text, text) FROM PUBLIC;
COMMENT ON FUNCTION webhooks.resume(text, text) IS
  'Resumes processing of a paused provider (claim() hands its events out again) and wakes the workers; audited '
  'in webhooks.provider_pauses (by: actor when given, else the session role). Returns false if the provider was not paused.';
-- end sql/src/process/resume.sql
-- The roles that could execute the old signature may execute the new one.
-- +goose StatementBegin
DO $$
DECLARE
    v_role text;
BEGIN
    FOR v_role IN
        SELECT r.rolname
        FROM pg_catalog.pg_proc AS p
        CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
        JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
        WHERE p.oid = 'webhooks.resume(text)'::pg_catalog.regprocedure
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> p.proowner
        ORDER BY r.rolname
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION webhooks.resume(text, text) TO %I', v_role);
    END LOOP;
END;
$$;
-- +goose StatementEnd

DROP FUNCTION webhooks.resume(text);
