-- +goose Up
-- webhooks._identify_slack gains an OUT parameter, unsigned_key (the key is a header
-- the signature does not cover), which _ingest_signed_at reads instead of a
-- list of kinds. CREATE OR REPLACE cannot change a function's OUT
-- parameters: drop it first (private, granted to no one; only PL/pgSQL
-- bodies call it, which look it up when they run).
DROP FUNCTION webhooks._identify_slack(jsonb, jsonb, jsonb);
-- begin sql/src/ingest/_identify_slack.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._identify_slack is the runner's slack Identify in SQL, called by
-- _identify once the body is known to be a JSON object: the idempotency key
-- and the event type (unchecked: _identify checks it), or the reason the key
-- is refused (idempotency key missing | invalid).
-- members holds the body's top-level members, name -> {"t": json type, "k":
-- value as a key (a string, or an integer's digits as sent), "s": string value}.
-- unsigned_key: the key is a header the signature does not cover, so
-- ingest_signed stores the body's digest with it.
-- Key and type: the body's event_id; event.type (a string) of an event_callback, else
-- type. A url_verification with a non-empty string challenge is a handshake:
-- no key, no type, no reason (ingest_signed answers it and stores nothing);
-- without one, idempotency key missing.
CREATE OR REPLACE FUNCTION webhooks._identify_slack(
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
BEGIN
    unsigned_key := false;
    event_type := coalesce(nullif(_identify_slack.members -> 'type' ->> 's', ''), '');
    IF event_type = 'url_verification' THEN
        event_type := NULL;
        IF nullif(_identify_slack.members -> 'challenge' ->> 's', '') IS NULL THEN
            reason := 'idempotency key missing';
        END IF;
        RETURN;  -- a handshake when no reason: no key, no type
    END IF;
    IF coalesce(_identify_slack.members -> 'event_id' ->> 't', 'null') = 'null' THEN
        reason := 'idempotency key missing';
    ELSIF NOT webhooks._valid_text(_identify_slack.members -> 'event_id' ->> 'k') THEN
        reason := 'idempotency key invalid';
    END IF;
    external_id := _identify_slack.members -> 'event_id' ->> 'k';
    IF event_type = 'event_callback' THEN
        -- jsonb keeps the last of a repeated name, as Go's encoding/json.
        event_type := CASE WHEN pg_catalog.jsonb_typeof(_identify_slack.payload -> 'event' -> 'type') = 'string'
                           THEN _identify_slack.payload -> 'event' ->> 'type' ELSE '' END;
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._identify_slack(jsonb, jsonb, jsonb) IS
  'Private (_identify): the slack idempotency key and event type of a verified JSON object body, '
  'or the reason its key is refused; unsigned_key: the key is a header the signature does not cover.';
REVOKE EXECUTE ON FUNCTION webhooks._identify_slack(jsonb, jsonb, jsonb) FROM PUBLIC;
-- end sql/src/ingest/_identify_slack.sql
