-- +goose Up
-- webhooks.provider_pauses audits pause() and resume().
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
