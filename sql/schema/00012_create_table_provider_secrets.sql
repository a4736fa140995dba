-- +goose Up
-- webhooks.provider_secrets holds the signing secrets webhooks.ingest_signed()
-- verifies deliveries with: one row per (provider, secret), several rows while
-- a secret is being rotated (a delivery is valid if any secret verifies it).
-- Every row of a provider has the same kind; webhooks.set_provider() keeps it so.
--
-- Only the owner of the schema's objects can read it: ingest_signed() is
-- SECURITY DEFINER, so a role may verify deliveries with these secrets without
-- being able to read them. Write it with set_provider()/drop_provider() only:
-- they validate every secret first, so no constraint error (whose DETAIL would
-- show the failing row) can ever print one. Secrets are stored as given, in
-- plain text: protect backups and dumps of this table like the secrets themselves.
CREATE TABLE webhooks.provider_secrets (
    provider   text        NOT NULL,
    kind       text        NOT NULL,
    secret     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT provider_secrets_pkey PRIMARY KEY (provider, secret),
    CONSTRAINT provider_secrets_provider_check
        CHECK (btrim(provider) <> '' AND octet_length(provider) <= 64),
    CONSTRAINT provider_secrets_kind_check
        CHECK (kind IN ('github', 'shopify', 'standardwebhooks', 'stripe', 'sume')),
    CONSTRAINT provider_secrets_secret_check CHECK (secret <> '')
);

REVOKE ALL ON TABLE webhooks.provider_secrets FROM PUBLIC;

COMMENT ON TABLE webhooks.provider_secrets IS
  'Signing secrets per provider for webhooks.ingest_signed(); readable by the owner only. '
  'Manage with webhooks.set_provider() and webhooks.drop_provider().';
