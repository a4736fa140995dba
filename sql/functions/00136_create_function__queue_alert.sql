-- +goose Up
-- begin sql/src/watch/_queue_alert.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._queue_alert is the trigger that turns check results into alerts:
-- after each row run_checks() writes to webhooks.check_results, it compares
-- the verdict with the check's webhooks.alert_state and, when the check
-- starts to breach (or clears), records the transition in webhooks.alerts,
-- the outbox the runners POST to PGINBOX_ALERT_URL. Same transaction as the
-- result, so a result is never recorded without its alert or the reverse.
--
-- One breach is one firing row, however many runs see it: a verdict equal to
-- the state changes nothing. Several runners judging the same check at once
-- never record it twice: the state row is taken FOR UPDATE SKIP LOCKED, so a
-- run that finds it held by another run's open transaction leaves the verdict
-- to that run (and to the next one) instead of waiting on it inside
-- run_checks (whose lock_timeout would fail the whole run). A result older
-- than the one last judged (a slow run committing late) changes nothing.
-- The alert's description is the check's, followed by the result's detail
-- in parentheses when it has one (a keyed check: which key was worst, its
-- value and its band). Rows older than 30 days are deleted whenever a new
-- one is written.
CREATE OR REPLACE FUNCTION webhooks._queue_alert()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_firing boolean;
    v_run_at timestamptz;
    v_breach boolean := NOT NEW.ok;
BEGIN
    INSERT INTO webhooks.alert_state (name) VALUES (NEW.name)
    ON CONFLICT (name) DO NOTHING;

    SELECT s.firing, s.run_at INTO v_firing, v_run_at
    FROM webhooks.alert_state AS s
    WHERE s.name = NEW.name
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND OR NEW.run_at <= v_run_at THEN
        RETURN NULL;
    END IF;

    UPDATE webhooks.alert_state AS s
    SET run_at = NEW.run_at,
        firing = v_breach,
        changed_at = CASE WHEN v_firing = v_breach THEN s.changed_at ELSE NEW.run_at END
    WHERE s.name = NEW.name;

    IF v_firing IS DISTINCT FROM v_breach THEN
        INSERT INTO webhooks.alerts (name, family, status, value, min_ok, max_ok, description, at)
        SELECT NEW.name, NEW.family, CASE WHEN v_breach THEN 'firing' ELSE 'resolved' END,
               NEW.value, NEW.min_ok, NEW.max_ok,
               concat_ws(' ', (SELECT c.description FROM webhooks.checks AS c WHERE c.name = NEW.name),
                         '(' || NEW.detail || ')'),
               NEW.run_at;
        -- The outbox stays bounded whether or not a runner sends it (checks
        -- run by pg_cron or pginbox checks with no PGINBOX_ALERT_URL set).
        DELETE FROM webhooks.alerts AS a WHERE a.created_at < now() - interval '30 days';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._queue_alert() IS
  'Trigger on webhooks.check_results: records in webhooks.alerts each check that starts to breach (firing) or clears '
  '(resolved), once per transition whatever the number of runners (state in webhooks.alert_state).';
REVOKE EXECUTE ON FUNCTION webhooks._queue_alert() FROM PUBLIC;

CREATE OR REPLACE TRIGGER check_results_queue_alert
    AFTER INSERT ON webhooks.check_results
    FOR EACH ROW EXECUTE FUNCTION webhooks._queue_alert();
-- end sql/src/watch/_queue_alert.sql
