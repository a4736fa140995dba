-- +goose Up
-- webhooks.expectations records, at submit time, that a webhook for an id
-- should arrive by a deadline. find_gaps() anti-joins it against events.
CREATE TABLE webhooks.expectations (
    provider    text        NOT NULL,
    external_id text        NOT NULL,
    deadline    timestamptz NOT NULL,
    status_url  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- set once the expected event (or a tombstone) has been seen.
    met_at      timestamptz,
    -- backfill attempts that found the job still running.
    checks      integer     NOT NULL DEFAULT 0,

    CONSTRAINT expectations_pkey PRIMARY KEY (provider, external_id),
    CONSTRAINT expectations_provider_check
        CHECK (btrim(provider) <> '' AND octet_length(provider) <= 64),
    CONSTRAINT expectations_external_id_check
        CHECK (btrim(external_id) <> '' AND octet_length(external_id) <= 255),
    CONSTRAINT expectations_status_url_check
        CHECK (status_url IS NULL OR status_url ~ '^https?://'),
    CONSTRAINT expectations_checks_check CHECK (checks >= 0)
);

-- Gap detection reads only expectations that are still open, by deadline.
CREATE INDEX expectations_open_idx ON webhooks.expectations (deadline)
    WHERE met_at IS NULL;

REVOKE ALL ON TABLE webhooks.expectations FROM PUBLIC;

COMMENT ON TABLE webhooks.expectations IS
  'Webhooks that should arrive by a deadline, recorded at submit time (webhooks.expect()).';
