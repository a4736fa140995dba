-- +goose Up
-- +goose StatementBegin
-- webhooks.expect records, at submit time, that a webhook for an id should
-- arrive by a deadline; find_gaps() reports it once the deadline has passed
-- with no event and no tombstone.
--
-- Idempotent: calling it again for the same (provider, external_id) never
-- adds a row. While the expectation is open, the latest call decides the
-- deadline (later or earlier), and replaces status_url when it passes one
-- (a NULL status_url keeps the stored one); the backfill counter (checks) is
-- kept. Once the expectation is met (its event or a tombstone was seen) a
-- call changes nothing. A call that would change nothing writes nothing.
CREATE OR REPLACE FUNCTION webhooks.expect(
    provider    text,
    external_id text,
    deadline    timestamptz,
    status_url  text DEFAULT NULL
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM webhooks._require_text('provider', expect.provider, 64);
    PERFORM webhooks._require_text('external_id', expect.external_id, 255);
    IF expect.deadline IS NULL OR NOT isfinite(expect.deadline) THEN
        RAISE EXCEPTION 'pginbox: deadline must be a finite timestamp, got %',
            coalesce(expect.deadline::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF expect.status_url IS NOT NULL THEN
        PERFORM webhooks._require_text('status_url', expect.status_url, 2048);
        IF expect.status_url !~ '^https?://[^/?#[:space:]]+' THEN
            RAISE EXCEPTION 'pginbox: status_url must be an absolute http(s) URL, got %', expect.status_url
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    INSERT INTO webhooks.expectations AS x (provider, external_id, deadline, status_url)
    VALUES (expect.provider, expect.external_id, expect.deadline, expect.status_url)
    ON CONFLICT ON CONSTRAINT expectations_pkey DO UPDATE
        SET deadline   = excluded.deadline,
            status_url = coalesce(excluded.status_url, x.status_url)
        WHERE x.met_at IS NULL
          AND (x.deadline, x.status_url) IS DISTINCT FROM
              (excluded.deadline, coalesce(excluded.status_url, x.status_url));
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.expect(text, text, timestamptz, text) IS
  'Records that a webhook for (provider, external_id) should arrive by deadline, optionally with the '
  'provider''s status_url for backfill. Idempotent: a repeat call on an open expectation moves the deadline to '
  'the new value and replaces status_url when a non-NULL one is given; on a met expectation it changes nothing.';
REVOKE EXECUTE ON FUNCTION webhooks.expect(text, text, timestamptz, text) FROM PUBLIC;
