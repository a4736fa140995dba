-- +goose Up
-- webhooks.tombstones silences ids known never to arrive (e.g. the provider
-- answered 404 for them), so gap queries stop reporting them.
CREATE TABLE webhooks.tombstones (
    provider    text        NOT NULL,
    external_id text        NOT NULL,
    reason      text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT tombstones_pkey PRIMARY KEY (provider, external_id),
    CONSTRAINT tombstones_provider_check
        CHECK (btrim(provider) <> '' AND octet_length(provider) <= 64),
    CONSTRAINT tombstones_external_id_check
        CHECK (btrim(external_id) <> '' AND octet_length(external_id) <= 255),
    CONSTRAINT tombstones_reason_check CHECK (btrim(reason) <> '')
);

COMMENT ON TABLE webhooks.tombstones IS
  'Ids known never to arrive; gap detection skips them (webhooks.tombstone()).';

-- +goose Down
DROP TABLE webhooks.tombstones;
