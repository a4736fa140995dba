-- +goose Up
-- Nothing in schema webhooks is anyone's by default. PostgreSQL grants
-- EXECUTE on every new function to PUBLIC; take it back for every function
-- that exists. (Per-schema default privileges cannot revoke that built-in
-- grant, and global ones would reach outside the schema, so every later
-- migration that creates a function revokes it in the same file; a test
-- checks that no function is left executable by PUBLIC.) Access is then
-- given per role with webhooks.grant_ingest, grant_worker and grant_reader.
REVOKE ALL ON SCHEMA webhooks FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA webhooks FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA webhooks FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA webhooks FROM PUBLIC;

-- +goose Down
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA webhooks TO PUBLIC;
