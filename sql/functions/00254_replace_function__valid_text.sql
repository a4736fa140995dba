-- +goose Up
-- begin sql/src/ingest/_valid_text.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._valid_text is the runner's validText: whether s can be stored as
-- an idempotency key or event type. Not blank (white space only, as Go's
-- strings.TrimSpace trims it: webhooks._space_class, U+0085 and U+00A0
-- included), at most 255 bytes, and no control
-- character (Go's unicode.IsControl: U+0000-U+001F and U+007F-U+009F).
CREATE OR REPLACE FUNCTION webhooks._valid_text(s text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT _valid_text.s IS NOT NULL
       AND pg_catalog.octet_length(_valid_text.s) <= 255
       AND _valid_text.s OPERATOR(pg_catalog.!~) E'[\\u0001-\\u001f\\u007f-\\u009f]'
       AND _valid_text.s OPERATOR(pg_catalog.!~)
           ('^[' OPERATOR(pg_catalog.||) webhooks._space_class() OPERATOR(pg_catalog.||) ']*$');
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._valid_text(text) IS
  'Private: the runner''s validText: s is not NULL, not blank (Unicode white space), at most '
  '255 bytes and free of control characters; usable as an idempotency key or event type.';
REVOKE EXECUTE ON FUNCTION webhooks._valid_text(text) FROM PUBLIC;
-- end sql/src/ingest/_valid_text.sql
