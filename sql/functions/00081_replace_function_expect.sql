-- +goose Up
-- expect, restated: an expectation's status_url can no longer be moved to
-- another origin. Whoever may call expect() decides what backfill fetches;
-- the first status_url recorded for an id fixes its origin, so a later call
-- cannot redirect backfill (and the provider's key) to a host of its choice.
-- A status_url must now also be a URL whose origin can be read.
-- begin sql/src/recover/expect.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.expect records, at submit time, that a webhook for an id should
-- arrive by a deadline; find_gaps() reports it once the deadline has passed
-- with no event and no tombstone.
--
-- Idempotent: calling it again for the same (provider, external_id) never
-- adds a row. While the expectation is open, the latest call decides the
-- deadline (later or earlier), and replaces status_url when it passes one on
-- the same origin (scheme, host and port, compared case-insensitively with
-- the default ports 80/443 made explicit); a NULL status_url keeps the stored
-- one; the backfill counter (checks) is kept. A status_url on another origin
-- than the stored one raises 22023 and changes nothing (open or met). Once
-- the expectation is met (its event or a tombstone was seen) a call changes
-- nothing. A call that would change nothing writes nothing.
--
-- The decision is taken by the one INSERT ... ON CONFLICT DO UPDATE ... WHERE,
-- on the locked current row, so concurrent calls cannot slip another origin
-- in between a check and a write.
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
DECLARE
    v_origin text;
    v_stored text;
    v_n      bigint;
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
        v_origin := webhooks._url_origin(expect.status_url);
        IF expect.status_url !~ '^https?://[^/?#[:space:]]+' OR v_origin IS NULL THEN
            RAISE EXCEPTION 'pginbox: status_url must be an absolute http(s) URL, got %', expect.status_url
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Like https://api.example.com/v1/jobs/123/status: a lower-case http or https scheme, a host, an optional port.';
        END IF;
    END IF;

    INSERT INTO webhooks.expectations AS x (provider, external_id, deadline, status_url)
    VALUES (expect.provider, expect.external_id, expect.deadline, expect.status_url)
    ON CONFLICT ON CONSTRAINT expectations_pkey DO UPDATE
        SET deadline   = excluded.deadline,
            status_url = coalesce(excluded.status_url, x.status_url)
        WHERE x.met_at IS NULL
          AND (x.deadline, x.status_url) IS DISTINCT FROM
              (excluded.deadline, coalesce(excluded.status_url, x.status_url))
          AND (excluded.status_url IS NULL OR x.status_url IS NULL
               OR webhooks._url_origin(x.status_url) = webhooks._url_origin(excluded.status_url));
    GET DIAGNOSTICS v_n = ROW_COUNT;

    -- Nothing written: met, unchanged, or another origin. ON CONFLICT locked
    -- the row, so this fresh snapshot sees what the WHERE saw.
    IF v_n = 0 AND expect.status_url IS NOT NULL THEN
        SELECT x.status_url INTO v_stored
        FROM webhooks.expectations AS x
        WHERE x.provider = expect.provider AND x.external_id = expect.external_id;
        IF v_stored IS NOT NULL AND webhooks._url_origin(v_stored) IS DISTINCT FROM v_origin THEN
            RAISE EXCEPTION 'pginbox: status_url of %/% cannot move from origin % to origin %',
                expect.provider, expect.external_id,
                coalesce(webhooks._url_origin(v_stored), '(unreadable)'), v_origin
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'An expectation''s status_url may only change within the origin it was first recorded with.',
                      HINT = 'Pass a status_url on the same origin, or NULL to keep the stored one.';
        END IF;
    END IF;
END;
$$;
-- +goose StatementEnd

REVOKE EXECUTE ON FUNCTION webhooks.expect(text, text, timestamptz, text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.expect(text, text, timestamptz, text) IS
  'Records that a webhook for (provider, external_id) should arrive by deadline, optionally with the '
  'provider''s status_url (an absolute http(s) URL) for backfill. Idempotent: a repeat call on an open expectation '
  'moves the deadline to the new value and replaces status_url when a non-NULL one on the same origin (scheme, '
  'host, port) is given; a status_url on another origin than the stored one raises 22023 and changes nothing; on '
  'a met expectation it changes nothing.';
-- end sql/src/recover/expect.sql
