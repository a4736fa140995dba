-- +goose Up
-- webhooks.view_refreshes is the registry of what refresh_views() refreshes:
-- one row per materialized view (or incrementally maintained table) that the
-- anomaly checks read, with when and how fast it was last refreshed. Each
-- view's own migration registers it here.
--
-- events_high_water is the highest webhooks.events.id that existed when the
-- view was last refreshed (or created): the first event above it is the
-- oldest event the view has not seen yet, which is how the staleness checks
-- measure staleness, and why a view that was never refreshed on a database
-- that never received anything is not stale.
CREATE TABLE webhooks.view_refreshes (
    view_name         text        PRIMARY KEY,
    -- NULL until the first refresh through refresh_view().
    refreshed_at      timestamptz,
    duration_ms       numeric,
    refreshes         bigint      NOT NULL DEFAULT 0,
    events_high_water bigint      NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT view_refreshes_view_name_check CHECK (view_name ~ '^[a-z_][a-z0-9_]*$'),
    CONSTRAINT view_refreshes_duration_check CHECK (duration_ms IS NULL OR duration_ms >= 0)
);

REVOKE ALL ON TABLE webhooks.view_refreshes FROM PUBLIC;

COMMENT ON TABLE webhooks.view_refreshes IS
  'Registry of the views refresh_views() refreshes: last refresh time, duration, count, and the highest event id seen.';
