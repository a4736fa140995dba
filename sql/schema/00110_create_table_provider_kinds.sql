-- +goose Up
-- webhooks.provider_kinds lists the provider kinds ingest_signed() verifies:
-- one row per kind, the same names as the Go list (internal/provider). It
-- replaces the CHECK that spelled the list on provider_secrets.kind (now a
-- foreign key to it) and the list set_provider kept. Each kind has its
-- functions webhooks._verify_<kind> and webhooks._identify_<kind>, which
-- _verify_signature and _identify dispatch to; signs_url marks the kinds
-- whose signature covers the URL the provider posts to (square), which
-- set_provider then requires. TestProviderKindsMatchSQL keeps the rows and
-- the Go list equal, TestEveryKindIsComplete each kind's parts.
CREATE TABLE webhooks.provider_kinds (
    kind      text    NOT NULL,
    signs_url boolean NOT NULL DEFAULT false,

    CONSTRAINT provider_kinds_pkey PRIMARY KEY (kind),
    -- A name that is also a function-name suffix and an identifier as is.
    CONSTRAINT provider_kinds_kind_check CHECK (kind ~ '^[a-z][a-z0-9]{0,39}$')
);

REVOKE ALL ON TABLE webhooks.provider_kinds FROM PUBLIC;

COMMENT ON TABLE webhooks.provider_kinds IS
  'The provider kinds webhooks.set_provider() accepts, each verified by webhooks._verify_<kind> and '
  'identified by webhooks._identify_<kind>; signs_url: its signature covers the notification URL (square).';

INSERT INTO webhooks.provider_kinds (kind, signs_url) VALUES
    ('github', false),
    ('linear', false),
    ('paddle', false),
    ('shopify', false),
    ('slack', false),
    ('square', true),
    ('standardwebhooks', false),
    ('stripe', false),
    ('sume', false);

-- The CHECK listed the kinds; the foreign key reads them from the table. The
-- table is small (a row per secret): validating the key is immediate.
ALTER TABLE webhooks.provider_secrets
    DROP CONSTRAINT provider_secrets_kind_check,
    ADD CONSTRAINT provider_secrets_kind_fkey
        FOREIGN KEY (kind) REFERENCES webhooks.provider_kinds (kind);
