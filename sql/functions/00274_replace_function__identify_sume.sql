-- +goose Up
-- webhooks._identify_sume gains an OUT parameter, unsigned_key (the key is a header
-- the signature does not cover), which _ingest_signed_at reads instead of a
-- list of kinds. CREATE OR REPLACE cannot change a function's OUT
-- parameters: drop it first (private, granted to no one; only PL/pgSQL
-- bodies call it, which look it up when they run).
DROP FUNCTION webhooks._identify_sume(jsonb, jsonb, jsonb);
-- begin sql/src/ingest/_identify_sume.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._identify_sume is the runner's sume Identify in SQL, called by
-- _identify once the body is known to be a JSON object: the idempotency key
-- and the event type (unchecked: _identify checks it), or the reason the key
-- is refused (idempotency key missing | invalid | event id mismatch).
-- members holds the body's top-level members, name -> {"t": json type, "k":
-- value as a key (a string, or an integer's digits as sent), "s": string value}.
-- unsigned_key: the key is a header the signature does not cover, so
-- ingest_signed stores the body's digest with it.
-- Key and type: first present and not null of the body's job_id, request_id, id; else the
-- X-Sume-Event-Id header. When the body has an id and the header is sent they
-- must be equal (the header is not signed). Type: event, else type (non-empty
-- strings).
CREATE OR REPLACE FUNCTION webhooks._identify_sume(
    headers jsonb,
    payload jsonb,
    members jsonb,
    OUT external_id text,
    OUT event_type  text,
    OUT reason      text,
    OUT unsigned_key boolean
)
RETURNS record
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
AS $$
#variable_conflict use_column
DECLARE
    v_header_id text;
    v_pick      text;
BEGIN
    v_header_id := coalesce(_identify_sume.headers -> 'x-sume-event-id' ->> 0, '');
    unsigned_key := false;
    v_pick := CASE
        WHEN coalesce(_identify_sume.members -> 'job_id' ->> 't', 'null') <> 'null' THEN 'job_id'
        WHEN coalesce(_identify_sume.members -> 'request_id' ->> 't', 'null') <> 'null' THEN 'request_id'
        WHEN coalesce(_identify_sume.members -> 'id' ->> 't', 'null') <> 'null' THEN 'id'
    END;
    IF v_pick IS NOT NULL THEN
        external_id := _identify_sume.members -> v_pick ->> 'k';
    ELSIF v_header_id <> '' THEN
        external_id := v_header_id;
        unsigned_key := true;
    ELSE
        reason := 'idempotency key missing';
    END IF;
    IF reason IS NULL AND NOT webhooks._valid_text(external_id) THEN
        reason := 'idempotency key invalid';
    END IF;
    -- The header is not signed: it may only repeat the signed body id.
    IF reason IS NULL AND v_header_id <> '' AND coalesce(_identify_sume.members -> 'id' ->> 't', 'null') <> 'null'
       AND (NOT webhooks._valid_text(_identify_sume.members -> 'id' ->> 'k')
            OR (_identify_sume.members -> 'id' ->> 'k') <> v_header_id COLLATE "C") THEN
        reason := 'event id mismatch';
    END IF;
    event_type := coalesce(nullif(_identify_sume.members -> 'event' ->> 's', ''),
                           nullif(_identify_sume.members -> 'type' ->> 's', ''), '');
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._identify_sume(jsonb, jsonb, jsonb) IS
  'Private (_identify): the sume idempotency key and event type of a verified JSON object body, '
  'or the reason its key is refused; unsigned_key: the key is a header the signature does not cover.';
REVOKE EXECUTE ON FUNCTION webhooks._identify_sume(jsonb, jsonb, jsonb) FROM PUBLIC;
-- end sql/src/ingest/_identify_sume.sql
