-- +goose Up
-- webhooks._identify_standardwebhooks gains an OUT parameter, unsigned_key (the key is a header
-- the signature does not cover), which _ingest_signed_at reads instead of a
-- list of kinds. CREATE OR REPLACE cannot change a function's OUT
-- parameters: drop it first (private, granted to no one; only PL/pgSQL
-- bodies call it, which look it up when they run).
DROP FUNCTION webhooks._identify_standardwebhooks(jsonb, jsonb, jsonb);
-- begin sql/src/ingest/_identify_standardwebhooks.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._identify_standardwebhooks is the runner's standardwebhooks Identify in SQL, called by
-- _identify once the body is known to be a JSON object: the idempotency key
-- and the event type (unchecked: _identify checks it), or the reason the key
-- is refused (idempotency key missing | invalid).
-- members holds the body's top-level members, name -> {"t": json type, "k":
-- value as a key (a string, or an integer's digits as sent), "s": string value}.
-- unsigned_key: the key is a header the signature does not cover, so
-- ingest_signed stores the body's digest with it.
-- Key and type: the webhook-id header; the body's type.
CREATE OR REPLACE FUNCTION webhooks._identify_standardwebhooks(
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
    external_id := coalesce(_identify_standardwebhooks.headers -> 'webhook-id' ->> 0, '');
    -- A header sent empty counts as missing.
    IF external_id = '' THEN
        reason := 'idempotency key missing';
    ELSIF NOT webhooks._valid_text(external_id) THEN
        reason := 'idempotency key invalid';
    END IF;
    event_type := coalesce(nullif(_identify_standardwebhooks.members -> 'type' ->> 's', ''), '');
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._identify_standardwebhooks(jsonb, jsonb, jsonb) IS
  'Private (_identify): the standardwebhooks idempotency key and event type of a verified JSON object body, '
  'or the reason its key is refused; unsigned_key: the key is a header the signature does not cover.';
REVOKE EXECUTE ON FUNCTION webhooks._identify_standardwebhooks(jsonb, jsonb, jsonb) FROM PUBLIC;
-- end sql/src/ingest/_identify_standardwebhooks.sql
