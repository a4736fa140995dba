-- +goose Up
-- webhooks.events.body_sha256 is the SHA-256 of the raw body of a delivery
-- whose idempotency key comes from a header the provider does not sign
-- (GitHub's X-GitHub-Delivery, Shopify's X-Shopify-Event-Id, Sume's
-- X-Sume-Event-Id when the body has no id of its own). Such a key can be
-- forged: a captured signed body could be replayed forever under fresh ids.
-- The unique index below makes one signed body one event per provider,
-- whatever key it arrives under, with the same guarantee as the key itself:
-- a unique index and one INSERT ... ON CONFLICT decide, never a read.
--
-- NULL for every other delivery (a key from the signed body, or a caller that
-- passes no digest), so the index holds only the rows that need it. The
-- digest is kept with the key, not with the payload: prune() drops payloads
-- early but the row (key and digest) only after keep_keys, so a replay of an
-- old captured body is still recognised as long as a redelivery of its key is.
-- 32 bytes a row.
--
-- Adding the column is instant. The CHECK is NOT VALID because every existing
-- row is NULL by construction (no scan needed); it holds for every new row.
-- Building the index reads the table once and blocks writes meanwhile: instant
-- on a new install, a short maintenance window on a very large one.
ALTER TABLE webhooks.events
    ADD COLUMN body_sha256 bytea,
    ADD CONSTRAINT events_body_sha256_check
        CHECK (body_sha256 IS NULL OR octet_length(body_sha256) = 32) NOT VALID;

CREATE UNIQUE INDEX events_provider_body_sha256_key ON webhooks.events (provider, body_sha256)
    WHERE body_sha256 IS NOT NULL;

COMMENT ON COLUMN webhooks.events.body_sha256 IS
  'SHA-256 of the raw body, only for deliveries keyed by an unsigned header (github, shopify, sume by '
  'X-Sume-Event-Id); unique per provider, so one signed body is one event whatever key it came under. '
  'Kept until the row is deleted (prune keep_keys), like the key.';
