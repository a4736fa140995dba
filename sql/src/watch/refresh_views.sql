-- +goose StatementBegin
-- webhooks.refresh_views refreshes every registered view in one call, under
-- the same transaction advisory lock as refresh_view(): two refreshers never
-- overlap, and the one that finds the lock taken skips the whole pass at once
-- (with a NOTICE) instead of waiting. All the views are refreshed in the
-- caller's transaction, which is fine for cron or psql; a scheduler that wants
-- one short transaction per view calls refresh_view(name) for each
-- view_name in webhooks.view_refreshes instead.
CREATE OR REPLACE FUNCTION webhooks.refresh_views()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_name text;
BEGIN
    FOR v_name IN SELECT r.view_name FROM webhooks.view_refreshes AS r ORDER BY r.view_name LOOP
        -- The first call takes the lock (or finds it taken: skip the pass);
        -- the rest re-enter it.
        IF NOT webhooks.refresh_view(v_name) THEN
            RETURN;
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks.refresh_views() IS
  'Refreshes every view the anomaly checks read (webhooks.view_refreshes), CONCURRENTLY, in one call, under the '
  'transaction advisory lock 31638955663652723; skips the whole pass with a NOTICE when another refresher holds it. '
  'For one short transaction per view, call webhooks.refresh_view(name) per view instead.';
REVOKE EXECUTE ON FUNCTION webhooks.refresh_views() FROM PUBLIC;
