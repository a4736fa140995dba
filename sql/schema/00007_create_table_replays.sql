-- +goose Up
-- webhooks.replays audits every deliberate re-run of an event: who asked, why,
-- and what state the event was in before.
CREATE TABLE webhooks.replays (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id          bigint      NOT NULL REFERENCES webhooks.events (id) ON DELETE CASCADE,
    reason            text        NOT NULL,
    replayed_by       text        NOT NULL DEFAULT session_user,
    replayed_at       timestamptz NOT NULL DEFAULT now(),
    previous_status   text        NOT NULL,
    previous_attempts integer     NOT NULL,

    CONSTRAINT replays_reason_check CHECK (btrim(reason) <> '')
);

CREATE INDEX replays_event_id_idx ON webhooks.replays (event_id);

REVOKE ALL ON TABLE webhooks.replays FROM PUBLIC;
REVOKE ALL ON SEQUENCE webhooks.replays_id_seq FROM PUBLIC;

COMMENT ON TABLE webhooks.replays IS
  'Audit trail of webhooks.replay(): the only way a processed event runs again.';
