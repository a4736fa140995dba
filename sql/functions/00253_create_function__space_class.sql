-- +goose Up
-- begin sql/src/verify/_space_class.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._space_class is Go's unicode.IsSpace, what the runner's
-- strings.TrimSpace and strings.Fields trim and split on, as the inside of a
-- regular-expression bracket expression: '[' || webhooks._space_class() || ']'.
-- It is the one copy of the class under sql/src: the verifiers' header
-- parsing (_verify_<kind>, _signature_bounds) and _valid_text's blank test
-- read it here. TestSQLSpaceIsGoSpace checks it against unicode.IsSpace, in
-- this file and in a migrated database, and fails when another file spells
-- the class out. An IMMUTABLE SQL function of one SELECT: the planner inlines
-- it and folds it into a constant.
CREATE OR REPLACE FUNCTION webhooks._space_class()
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT E'\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000'::text
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._space_class() IS
  'Private: Go''s unicode.IsSpace as the inside of a regular-expression bracket expression, the white space '
  'the verifiers and _valid_text trim and split on, as the runner does (strings.TrimSpace, strings.Fields).';
REVOKE EXECUTE ON FUNCTION webhooks._space_class() FROM PUBLIC;
-- end sql/src/verify/_space_class.sql
