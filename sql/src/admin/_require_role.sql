-- +goose StatementBegin
-- webhooks._require_role raises a clear exception unless a role of that exact
-- name exists; the grant functions quote it with %I.
CREATE OR REPLACE FUNCTION webhooks._require_role(role text)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    IF role IS NULL OR NOT EXISTS (SELECT FROM pg_catalog.pg_roles AS r WHERE r.rolname = _require_role.role) THEN
        RAISE EXCEPTION 'pginbox: role % does not exist', coalesce(quote_literal(role), 'NULL')
            USING ERRCODE = 'undefined_object';
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._require_role(text) IS
  'Private: raises undefined_object unless a role with exactly that name exists.';
REVOKE EXECUTE ON FUNCTION webhooks._require_role(text) FROM PUBLIC;
