-- +goose Up
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
