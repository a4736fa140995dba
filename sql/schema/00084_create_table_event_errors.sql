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
