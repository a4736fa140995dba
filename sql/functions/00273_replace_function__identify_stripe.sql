-- +goose Up
-- webhooks._identify_stripe gains an OUT parameter, unsigned_key (the key is a header
-- the signature does not cover), which _ingest_signed_at reads instead of a
-- list of kinds. CREATE OR REPLACE cannot change a function's OUT
-- parameters: drop it first (private, granted to no one; only PL/pgSQL
-- bodies call it, which look it up when they run).
DROP FUNCTION webhooks._identify_stripe(jsonb, jsonb, jsonb);
-- begin sql/src/ingest/_identify_stripe.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._identify_stripe is the runner's stripe Identify in SQL, called by
-- _identify once the body is known to be a JSON object: the idempotency key
-- and the event type (unchecked: _identify checks it), or the reason the key
-- is refused (idempotency key missing | invalid).
-- members holds the body's top-level members, name -> {"t": json type, "k":
-- value as a key (a string, or an integer's digits as sent), "s": string value}.
-- unsigned_key: the key is a header the signature does not cover, so
-- ingest_signed stores the body's digest with it.
-- Key and type: the body's id; type.
CREATE OR REPLACE FUNCTION webhooks._identify_stripe(
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
    IF coalesce(_identify_stripe.members -> 'id' ->> 't', 'null') = 'null' THEN
        reason := 'idempotency key missing';
    ELSIF NOT webhooks._valid_text(_identify_stripe.members -> 'id' ->> 'k') THEN
        reason := 'idempotency key invalid';
    END IF;
    external_id := _identify_stripe.members -> 'id' ->> 'k';
    event_type := coalesce(nullif(_identify_stripe.members -> 'type' ->> 's', ''), '');
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._identify_stripe(jsonb, jsonb, jsonb) IS
  'Private (_identify): the stripe idempotency key and event type of a verified JSON object body, '
  'or the reason its key is refused; unsigned_key: the key is a header the signature does not cover.';
REVOKE EXECUTE ON FUNCTION webhooks._identify_stripe(jsonb, jsonb, jsonb) FROM PUBLIC;
-- end sql/src/ingest/_identify_stripe.sql
