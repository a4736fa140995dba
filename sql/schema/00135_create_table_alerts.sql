-- +goose Up
-- webhooks.alert_state is, per anomaly check, whether an alert for it is
-- firing and the run it was last judged on. webhooks._queue_alert (a trigger
-- on webhooks.check_results) updates it under a row lock, so however many
-- runners run the checks at once, each transition is recorded once.
CREATE TABLE webhooks.alert_state (
    name       text        PRIMARY KEY,
    firing     boolean     NOT NULL DEFAULT false,
    -- run_at of the newest result judged: an older run committing late
    -- never undoes a newer verdict.
    run_at     timestamptz NOT NULL DEFAULT '-infinity',
    changed_at timestamptz
);

REVOKE ALL ON TABLE webhooks.alert_state FROM PUBLIC;

COMMENT ON TABLE webhooks.alert_state IS
  'Per anomaly check: whether its alert is firing, and the run it was last judged on (see webhooks.alerts).';

-- webhooks.alerts is the outbox of alert POSTs (PGINBOX_ALERT_URL): one row
-- per transition of a check (firing when it starts to breach, resolved when
-- it clears), written in the transaction that recorded the check result. A
-- runner sends the oldest due row under FOR UPDATE SKIP LOCKED and marks it
-- sent in the same transaction, so one transition is one POST whatever the
-- number of runners.
CREATE TABLE webhooks.alerts (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            text        NOT NULL,
    family          text        NOT NULL,
    status          text        NOT NULL CHECK (status IN ('firing', 'resolved')),
    value           numeric,
    min_ok          numeric,
    max_ok          numeric,
    description     text,
    -- the check run that saw the transition
    at              timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    -- set when the receiver refused it for good (a 4xx other than 408/429)
    given_up_at     timestamptz,
    last_error      text
);

-- The senders' pick: rows still to send, oldest first.
CREATE INDEX alerts_unsent_idx ON webhooks.alerts (id) WHERE sent_at IS NULL AND given_up_at IS NULL;

REVOKE ALL ON TABLE webhooks.alerts FROM PUBLIC;

COMMENT ON TABLE webhooks.alerts IS
  'Outbox of alert POSTs: one row per check that started to breach (firing) or cleared (resolved), '
  'sent once by one runner (sent_at), retried with backoff (attempts, next_attempt_at, last_error).';
