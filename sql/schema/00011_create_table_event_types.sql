-- +goose Up
-- webhooks.event_types remembers which event types each provider has sent and
-- when each was first and last seen, for the new_event_types check. A
-- materialized view over a week of events would rescan the whole week on every
-- refresh; this table is maintained incrementally instead (refresh_view(
-- 'event_types') calls webhooks._refresh_event_types(), which reads only the
-- events received since its previous run). Types unseen for 90 days are
-- forgotten.
CREATE TABLE webhooks.event_types (
    provider      text        NOT NULL,
    event_type    text        NOT NULL,
    first_seen_at timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,

    CONSTRAINT event_types_pkey PRIMARY KEY (provider, event_type),
    CONSTRAINT event_types_seen_check CHECK (first_seen_at <= last_seen_at)
);

-- Never refreshed yet: the first refresh reads the last 8 days. Only events
-- that arrive from now on count as unseen for the staleness checks.
INSERT INTO webhooks.view_refreshes (view_name, refreshed_at, events_high_water)
SELECT 'event_types', NULL, coalesce(max(e.id), 0) FROM webhooks.events AS e;

REVOKE ALL ON TABLE webhooks.event_types FROM PUBLIC;

COMMENT ON TABLE webhooks.event_types IS
  'Event types per provider with first/last seen times, maintained incrementally by refresh_view(''event_types'').';
