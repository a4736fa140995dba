-- +goose Up
-- begin sql/src/ingest/_ingest_batch_problem.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._ingest_batch_problem says what ingest_webhook would raise on for
-- one element of a batch, in the same words, or NULL when the element can be
-- stored: ingest_batch refuses that element alone instead of failing the call.
CREATE FUNCTION webhooks._ingest_batch_problem(
    p_provider text, p_external_id text, p_event_type text, p_payload jsonb, p_source text, p_body_sha256 bytea
)
RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN p_provider IS NULL THEN 'pginbox: provider must not be null'
        WHEN pg_catalog.btrim(p_provider, E' \t\r\n') = '' THEN 'pginbox: provider must not be empty'
        WHEN pg_catalog.octet_length(p_provider) > 64 THEN
            format('pginbox: provider is %s bytes long; the limit is 64 bytes', pg_catalog.octet_length(p_provider))
        WHEN p_external_id IS NULL THEN 'pginbox: external_id must not be null'
        WHEN pg_catalog.btrim(p_external_id, E' \t\r\n') = '' THEN 'pginbox: external_id must not be empty'
        WHEN pg_catalog.octet_length(p_external_id) > 255 THEN
            format('pginbox: external_id is %s bytes long; the limit is 255 bytes', pg_catalog.octet_length(p_external_id))
        WHEN p_event_type IS NULL THEN 'pginbox: event_type must not be null'
        WHEN pg_catalog.btrim(p_event_type, E' \t\r\n') = '' THEN 'pginbox: event_type must not be empty'
        WHEN pg_catalog.octet_length(p_event_type) > 255 THEN
            format('pginbox: event_type is %s bytes long; the limit is 255 bytes', pg_catalog.octet_length(p_event_type))
        WHEN p_source IS NULL THEN 'pginbox: source must not be null'
        WHEN pg_catalog.btrim(p_source, E' \t\r\n') = '' THEN 'pginbox: source must not be empty'
        WHEN pg_catalog.octet_length(p_source) > 32 THEN
            format('pginbox: source is %s bytes long; the limit is 32 bytes', pg_catalog.octet_length(p_source))
        WHEN p_payload IS NULL OR pg_catalog.jsonb_typeof(p_payload) <> 'object' THEN
            format('pginbox: payload must be a JSON object, got %s', coalesce(pg_catalog.jsonb_typeof(p_payload), 'SQL NULL'))
        WHEN p_body_sha256 IS NOT NULL AND pg_catalog.octet_length(p_body_sha256) <> 32 THEN
            format('pginbox: body_sha256 must be the 32-byte SHA-256 of the raw body, got %s bytes',
                   pg_catalog.octet_length(p_body_sha256))
    END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._ingest_batch_problem(text, text, text, jsonb, text, bytea) IS
  'Private: what ingest_webhook would raise on for these arguments (its message), or NULL when they can be stored.';
REVOKE EXECUTE ON FUNCTION webhooks._ingest_batch_problem(text, text, text, jsonb, text, bytea) FROM PUBLIC;
-- end sql/src/ingest/_ingest_batch_problem.sql
