-- +goose Up
-- webhooks.provider_secrets.url is the exact URL a provider was given, for the
-- kinds whose signature covers it (square signs "<notification URL><body>").
-- Like kind, every row of a provider holds the same value;
-- webhooks.set_provider() writes it (NULL for the kinds that sign no URL)
-- and checks it first, so no constraint error can show a row.
ALTER TABLE webhooks.provider_secrets ADD COLUMN url text;

COMMENT ON COLUMN webhooks.provider_secrets.url IS
  'The exact URL the provider was given, signed by kind square; NULL for the other kinds. Written by webhooks.set_provider().';
