-- +goose Up
-- Tombstones get the same generated seq as events, so find_sequence_gaps()
-- can skip tombstoned ids with an index range scan instead of a probe per id
-- of the window; and a resolution mark: reconcile() does not delete a
-- tombstone whose event arrived after all, it records when and which event,
-- so "we were told it would never come, and it came" stays visible.
ALTER TABLE webhooks.tombstones
    ADD COLUMN seq bigint GENERATED ALWAYS AS (
        CASE WHEN external_id ~ '^(0|[1-9][0-9]{0,17})$' THEN external_id::bigint END
    ) STORED,
    ADD COLUMN resolved_at       timestamptz,
    ADD COLUMN resolved_event_id bigint,
    ADD CONSTRAINT tombstones_resolved_check
        CHECK ((resolved_at IS NULL) = (resolved_event_id IS NULL));

CREATE INDEX tombstones_provider_seq_idx ON webhooks.tombstones (provider, seq)
    WHERE seq IS NOT NULL;

COMMENT ON COLUMN webhooks.tombstones.seq IS
  'external_id as a number when it is a canonical decimal of 1 to 18 digits, else NULL (generated).';
COMMENT ON COLUMN webhooks.tombstones.resolved_at IS
  'When reconcile() found that the event arrived after all (the tombstone then no longer silences anything).';
COMMENT ON COLUMN webhooks.tombstones.resolved_event_id IS
  'The webhooks.events id of the event that arrived after the tombstone (no foreign key: prune() may delete it first).';

-- +goose Down
DROP INDEX webhooks.tombstones_provider_seq_idx;
ALTER TABLE webhooks.tombstones
    DROP CONSTRAINT tombstones_resolved_check,
    DROP COLUMN resolved_event_id,
    DROP COLUMN resolved_at,
    DROP COLUMN seq;
