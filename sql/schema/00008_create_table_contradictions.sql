-- +goose Up
-- webhooks.contradictions records events whose stored state contradicts their
-- own payload, as found by reconcile(). The unique key (event_id, kind) means
-- a contradiction is counted once, when first found, and never again however
-- many passes re-read the row. Rows go with their event (ON DELETE CASCADE).
CREATE TABLE webhooks.contradictions (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id    bigint      NOT NULL REFERENCES webhooks.events (id) ON DELETE CASCADE,
    kind        text        NOT NULL,
    detail      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    detected_at timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT contradictions_event_id_kind_key UNIQUE (event_id, kind),
    CONSTRAINT contradictions_kind_check CHECK (kind IN (
        -- the stored event_type is not the payload's own top-level event/type.
        'event_type_mismatch',
        -- a job.failed / job.canceled whose payload has no error object.
        'error_missing',
        -- the payload's status is not the one the terminal event type implies.
        'status_mismatch',
        -- a second terminal event for a job that already reached one.
        'duplicate_terminal'
    )),
    CONSTRAINT contradictions_detail_check CHECK (jsonb_typeof(detail) = 'object')
);

CREATE INDEX contradictions_detected_at_idx ON webhooks.contradictions (detected_at);

REVOKE ALL ON TABLE webhooks.contradictions FROM PUBLIC;
REVOKE ALL ON SEQUENCE webhooks.contradictions_id_seq FROM PUBLIC;

COMMENT ON TABLE webhooks.contradictions IS
  'Events whose state contradicts their payload, found by webhooks.reconcile(); one row per (event, kind), '
  'so each contradiction is counted once.';
