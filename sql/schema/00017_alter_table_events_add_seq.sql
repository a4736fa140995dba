-- +goose Up
-- webhooks.events.seq is the external_id read as a number, for providers whose
-- ids form a numeric sequence. It is filled by Postgres itself at ingest
-- (a stored generated column: no caller can forget it or get it wrong) and is
-- NULL for every other id, so it costs nothing for non-numeric providers.
--
-- Only canonical decimals count: 1 to 18 digits, no sign, no leading zero
-- (except "0" itself). "007" would otherwise read as 7 and make the ids "7"
-- and "007" one number; a non-canonical id is left out of sequence gap
-- detection altogether. 18 digits always fit in a bigint.
--
-- Adding a stored generated column rewrites the table under an ACCESS
-- EXCLUSIVE lock: instant on a new install, a maintenance window on a large
-- existing one.
ALTER TABLE webhooks.events
    ADD COLUMN seq bigint GENERATED ALWAYS AS (
        CASE WHEN external_id ~ '^(0|[1-9][0-9]{0,17})$' THEN external_id::bigint END
    ) STORED;

-- find_sequence_gaps() reads the received ids of one provider in a window of
-- the sequence from this index, in order: its cost follows the rows present,
-- not the width of the window. Partial, so non-numeric ids take no space.
CREATE INDEX events_provider_seq_idx ON webhooks.events (provider, seq)
    WHERE seq IS NOT NULL;

COMMENT ON COLUMN webhooks.events.seq IS
  'external_id as a number when it is a canonical decimal of 1 to 18 digits, else NULL (generated). '
  'Used by find_sequence_gaps().';

-- +goose Down
DROP INDEX webhooks.events_provider_seq_idx;
ALTER TABLE webhooks.events DROP COLUMN seq;
