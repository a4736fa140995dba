-- +goose Up
-- webhooks.alert_receivers is, per alert URL (PGINBOX_ALERT_URL), when a
-- runner first used it. A runner sends only the alerts queued from that
-- moment on: an alert URL set for the first time (or changed to a new
-- receiver) gets the transitions that happen while it is set, not the
-- backlog of those queued before, when no one was told. The URL is kept as
-- its SHA-256 only: a Slack incoming webhook URL carries its secret in the
-- path.
CREATE TABLE webhooks.alert_receivers (
    url_sha256    bytea       PRIMARY KEY CHECK (length(url_sha256) = 32),
    first_used_at timestamptz NOT NULL DEFAULT now()
);

REVOKE ALL ON TABLE webhooks.alert_receivers FROM PUBLIC;

COMMENT ON TABLE webhooks.alert_receivers IS
  'Per alert URL (its SHA-256): when a runner first used it; alerts queued before that are not sent to it.';
