-- Ordering checks: providers with strict order per key (webhooks.ordering).
-- A sequence whose head fails, or is dead while dead_blocks, holds every
-- later event of its key; webhooks.blocked_sequences lists them, read live
-- through two partial indexes (no materialized view needed). See
-- docs/ordering.md.
-- +goose StatementBegin
INSERT INTO webhooks.checks AS c (name, family, description, query, min_ok, max_ok)
VALUES
('sequence_blocked_seconds', 'ordering',
 'Seconds the longest-blocked sequence of an ordered provider has waited on its head (failing and retried, or dead while dead_blocks) since the head first failed (webhooks.blocked_sequences).',
 $q$SELECT extract(epoch FROM now() - min(b.blocked_since)) FROM webhooks.blocked_sequences AS b$q$,
 NULL, 600)
ON CONFLICT (name) DO UPDATE
    SET family = excluded.family, description = excluded.description, query = excluded.query;
-- +goose StatementEnd
