-- +goose Up
-- The kinds webhooks.provider_secrets.kind accepts, after paddle, slack,
-- linear and square were added: the CHECK is dropped and added back, under
-- the same name, with the full list (the Go list of kinds and
-- set_provider's), in one transaction (the table is small: one row per
-- secret).
ALTER TABLE webhooks.provider_secrets
    DROP CONSTRAINT provider_secrets_kind_check,
    ADD CONSTRAINT provider_secrets_kind_check
        CHECK (kind IN ('github', 'linear', 'paddle', 'shopify', 'slack', 'square', 'standardwebhooks', 'stripe', 'sume'));
