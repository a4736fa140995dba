-- +goose Up
-- webhooks.alert_receivers is, per alert URL (PGINBOX_ALERT_URL), when a
-- runner first used it and which alerts it is never sent. An alert URL set
-- for the first time (or changed to a new receiver) gets the checks still
-- firing (the newest firing of each, once) and the transitions committed
-- from then on, not the backlog of those queued before, when no one was
-- told: the runner that records the first use lists, in the same
-- transaction, every unsent alert its snapshot sees except the newest
-- firing of each check still firing (skipped_alert_ids). A transition whose
-- transaction commits after that snapshot is not in the list, whatever its
-- id or created_at, and is sent. The URL is kept as its SHA-256 only: a
-- Slack incoming webhook URL carries its secret in the path.
CREATE TABLE webhooks.alert_receivers (
    url_sha256        bytea       PRIMARY KEY CHECK (length(url_sha256) = 32),
    first_used_at     timestamptz NOT NULL DEFAULT now(),
    -- the backlog at first use: alerts (webhooks.alerts.id) never sent to
    -- this URL. Bounded: only alerts less than a day old are listed (older
    -- ones are never sent anyway).
    skipped_alert_ids bigint[]    NOT NULL DEFAULT '{}'
);

REVOKE ALL ON TABLE webhooks.alert_receivers FROM PUBLIC;

COMMENT ON TABLE webhooks.alert_receivers IS
  'Per alert URL (its SHA-256): when a runner first used it, and the alerts queued before that it is never sent '
  '(skipped_alert_ids: the backlog at first use, less the newest firing of each check still firing).';
