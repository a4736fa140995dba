-- +goose Up
-- +goose StatementBegin
-- The kinds webhooks.provider_secrets accepts gain paddle. A CHECK cannot be
-- altered: it is dropped and added back with the new list, in one
-- transaction (the table is small: one row per secret).
ALTER TABLE webhooks.provider_secrets
    DROP CONSTRAINT provider_secrets_kind_check,
    ADD CONSTRAINT provider_secrets_kind_check
        CHECK (kind IN ('github', 'paddle', 'shopify', 'standardwebhooks', 'stripe', 'sume'));
-- +goose StatementEnd
