-- +goose Up
-- begin sql/src/process/pause.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.pause(provider, reason) stops claim() from handing out the
-- provider's events (they stay pending, deliveries are still stored) until
-- resume(provider). Audited in webhooks.provider_pauses. Pausing a paused
-- provider updates its reason. Returns true when it was not paused before.
-- actor, when given, names who asked (the console passes the operator: its
-- token's label or the client's address) and is recorded as paused_by and
-- in the audit's by_role; without it, the session's role, as before.
CREATE OR REPLACE FUNCTION webhooks.pause(provider text, reason text, actor text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    v_new boolean;
    v_by  text := coalesce(nullif(btrim(pause.actor, E' \t\r\n'), ''), session_user);
BEGIN
    PERFORM webhooks._require_text('provider', pause.provider, 64);
    IF pause.reason IS NULL OR btrim(pause.reason, E' \t\r\n') = '' THEN
        RAISE EXCEPTION 'pginbox: reason must not be %', CASE WHEN pause.reason IS NULL THEN 'null' ELSE 'blank' END
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Say why the provider is paused; it is shown on the console.';
    END IF;
    PERFORM webhooks._require_text('reason', pause.reason, 1000);
    PERFORM webhooks._require_text('actor', v_by, 200);
    INSERT INTO webhooks.paused_providers AS p (provider, reason, paused_by)
    VALUES (pause.provider, pause.reason, v_by)
    ON CONFLICT ON CONSTRAINT paused_providers_pkey
        DO UPDATE SET reason = EXCLUDED.reason, paused_by = EXCLUDED.paused_by
    RETURNING (xmax = 0) INTO v_new;
    INSERT INTO webhooks.provider_pauses (provider, action, reason, by_role)
    VALUES (pause.provider, 'pause', pause.reason, v_by);
    RETURN v_new;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.pause(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION webhooks.pause(text, text, text) IS
  'Pauses processing of a provider: claim() leaves its events pending until resume(provider); ingest goes on. '
  'Audited in webhooks.provider_pauses (by: actor when given, else the session role). Returns true if it was not paused already. Raises 22023 on a blank reason.';
-- end sql/src/process/pause.sql
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
        WHERE p.oid = 'webhooks.pause(text, text)'::pg_catalog.regprocedure
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> p.proowner
        ORDER BY r.rolname
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION webhooks.pause(text, text, text) TO %I', v_role);
    END LOOP;
END;
$$;
-- +goose StatementEnd

DROP FUNCTION webhooks.pause(text, text);
