-- +goose Up
-- webhooks.event_errors keeps every failed attempt's error (events.last_error
-- holds only the latest, and a replay clears it): one row per failure,
-- written by fail() and rescue_leases() only, so a success costs nothing
-- extra. Rows go with their event (ON DELETE CASCADE: prune's row deletion
-- takes them along).
CREATE TABLE webhooks.event_errors (
    event_id bigint      NOT NULL REFERENCES webhooks.events (id) ON DELETE CASCADE,
    seq      bigint      GENERATED ALWAYS AS IDENTITY,
    attempt  integer     NOT NULL CHECK (attempt >= 0),
    at       timestamptz NOT NULL DEFAULT now(),
    error    text        NOT NULL CHECK (char_length(error) <= 8192),
    PRIMARY KEY (event_id, seq)
);
COMMENT ON TABLE webhooks.event_errors IS
  'One row per failed attempt of an event (attempt number, time, error; oldest first by seq), kept across '
  'replays and deleted with the event. Written by fail() and rescue_leases().';

-- webhooks.paused_providers: providers whose events claim() leaves pending
-- (an operator fixing a handler). pause()/resume() write it and the audit.
CREATE TABLE webhooks.paused_providers (
    provider  text        PRIMARY KEY CHECK (btrim(provider) <> '' AND octet_length(provider) <= 64),
    reason    text        NOT NULL CHECK (btrim(reason) <> '' AND octet_length(reason) <= 1000),
    paused_at timestamptz NOT NULL DEFAULT now(),
    paused_by text        NOT NULL DEFAULT session_user
);
COMMENT ON TABLE webhooks.paused_providers IS
  'Providers whose events claim() skips until resume(): who paused them, when and why.';

CREATE TABLE webhooks.provider_pauses (
    id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider text        NOT NULL,
    action   text        NOT NULL CHECK (action IN ('pause', 'resume')),
    reason   text,
    at       timestamptz NOT NULL DEFAULT now(),
    by_role  text        NOT NULL DEFAULT session_user
);
COMMENT ON TABLE webhooks.provider_pauses IS
  'Audit of pause() and resume(): every pause and resume of a provider, with its reason and role.';

-- The console's event list walks events newest first ((received_at, id)
-- descending) by status, or by provider and status: with these two indexes
-- each page, each time window and each capped per-status count is an index
-- range scan.
CREATE INDEX events_status_received_idx ON webhooks.events (status, received_at, id);
CREATE INDEX events_provider_status_received_idx ON webhooks.events (provider, status, received_at, id);
