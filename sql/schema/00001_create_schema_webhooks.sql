-- +goose Up
-- The one schema pginbox owns. Everything pginbox creates lives in it, so a
-- database that already holds an application's own schemas is left untouched.
CREATE SCHEMA IF NOT EXISTS webhooks;

-- Nothing in schema webhooks is anyone's by default. PostgreSQL grants
-- EXECUTE on every new function to PUBLIC, and per-schema default privileges
-- cannot revoke that built-in grant (global ones would reach outside the
-- schema), so every migration that creates an object revokes PUBLIC's
-- privileges on it in the same file; a test checks that no function is left
-- executable by PUBLIC. Access is given per role with webhooks.grant_ingest,
-- grant_worker and grant_reader.
REVOKE ALL ON SCHEMA webhooks FROM PUBLIC;

COMMENT ON SCHEMA webhooks IS
  'pginbox: a Postgres-native inbox for third-party webhooks (https://github.com/pginbox/pginbox).';
