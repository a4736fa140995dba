-- +goose Up
-- The one schema pginbox owns. Everything pginbox creates lives in it, so a
-- database that already holds an application's own schemas is left untouched.
CREATE SCHEMA IF NOT EXISTS webhooks;

COMMENT ON SCHEMA webhooks IS
  'pginbox: a Postgres-native inbox for third-party webhooks (https://github.com/pginbox/pginbox).';

-- +goose Down
DROP SCHEMA IF EXISTS webhooks CASCADE;
