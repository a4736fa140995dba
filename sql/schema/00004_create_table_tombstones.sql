-- +goose Up
-- webhooks.tombstones silences ids known never to arrive (e.g. the provider
-- answered 404 for them), so gap queries stop reporting them.
--
-- A tombstone has the same generated seq as an event, so find_sequence_gaps()
-- can skip tombstoned ids with an index range scan instead of a probe per id
-- of the window; and a resolution mark: reconcile() does not delete a
-- tombstone whose event arrived after all, it records when and which event,
-- so "we were told it would never come, and it came" stays visible.
CREATE TABLE webhooks.tombstones (
    provider    text        NOT NULL,
    external_id text        NOT NULL,
    reason      text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    seq         bigint      GENERATED ALWAYS AS (
        CASE WHEN external_id ~ '^(0|[1-9][0-9]{0,17})$' THEN external_id::bigint END
    ) STORED,
    resolved_at       timestamptz,
    resolved_event_id bigint,

    CONSTRAINT tombstones_pkey PRIMARY KEY (provider, external_id),
    CONSTRAINT tombstones_provider_check
        CHECK (btrim(provider) <> '' AND octet_length(provider) <= 64),
    CONSTRAINT tombstones_external_id_check
        CHECK (btrim(external_id) <> '' AND octet_length(external_id) <= 255),
    CONSTRAINT tombstones_reason_check CHECK (btrim(reason) <> ''),
    CONSTRAINT tombstones_resolved_check
        CHECK ((resolved_at IS NULL) = (resolved_event_id IS NULL))
);

CREATE INDEX tombstones_provider_seq_idx ON webhooks.tombstones (provider, seq)
    WHERE seq IS NOT NULL;

REVOKE ALL ON TABLE webhooks.tombstones FROM PUBLIC;

COMMENT ON TABLE webhooks.tombstones IS
  'Ids known never to arrive; gap detection skips them (webhooks.tombstone()).';
COMMENT ON COLUMN webhooks.tombstones.seq IS
  'external_id as a number when it is a canonical decimal of 1 to 18 digits, else NULL (generated).';
COMMENT ON COLUMN webhooks.tombstones.resolved_at IS
  'When reconcile() found that the event arrived after all (the tombstone then no longer silences anything).';
COMMENT ON COLUMN webhooks.tombstones.resolved_event_id IS
  'The webhooks.events id of the event that arrived after the tombstone (no foreign key: prune() may delete it first).';
