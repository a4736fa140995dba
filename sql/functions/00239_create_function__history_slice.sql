-- +goose Up
-- begin sql/src/store/_history_slice.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._history_slice makes sure the day slice of webhooks.history that
-- holds day (UTC) exists: webhooks.history_YYYYMMDD, created empty and
-- attached. CREATE TABLE ... PARTITION OF would take ACCESS EXCLUSIVE on
-- webhooks.history, stopping its readers and writers; a table created on its
-- own and then attached takes SHARE UPDATE EXCLUSIVE, which no INSERT or
-- SELECT waits for. Concurrent callers for one day are serialised by an
-- advisory lock and the look after it. A slice found is one catalog look-up.
-- A day prune() dropped is created again when asked for (an event pending
-- longer than keep_payload, an import of old history): the next prune()
-- drops it again.
CREATE OR REPLACE FUNCTION webhooks._history_slice(day date)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_name text := 'history_' || pg_catalog.to_char(_history_slice.day, 'YYYYMMDD');
BEGIN
    IF _history_slice.day IS NULL THEN
        RAISE EXCEPTION 'pginbox: _history_slice needs a day' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.to_regclass('webhooks.' || v_name) IS NOT NULL THEN
        RETURN;
    END IF;
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('pginbox.history_slice'),
                                             _history_slice.day - date '2000-01-01');
    IF pg_catalog.to_regclass('webhooks.' || v_name) IS NOT NULL THEN
        RETURN;
    END IF;
    EXECUTE pg_catalog.format(
        'CREATE TABLE webhooks.%I (LIKE webhooks.history INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED) '
        'WITH (fillfactor = 100, autovacuum_freeze_min_age = 0, autovacuum_vacuum_insert_scale_factor = 0.1)',
        v_name);
    EXECUTE pg_catalog.format(
        'ALTER TABLE webhooks.history ATTACH PARTITION webhooks.%I FOR VALUES FROM (%L) TO (%L)',
        v_name,
        (_history_slice.day::timestamp AT TIME ZONE 'UTC'),
        ((_history_slice.day + 1)::timestamp AT TIME ZONE 'UTC'));
    INSERT INTO webhooks.history_days AS d (day)
    VALUES (_history_slice.day)
    ON CONFLICT (day) DO UPDATE SET state = 'live', created_at = now(), dropped_at = NULL;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._history_slice(date) IS
  'Private: creates and attaches webhooks.history_YYYYMMDD, the slice of webhooks.history for one UTC day, unless '
  'it exists (one catalog look-up then). Never takes a lock that stops inserts into or reads of webhooks.history.';
REVOKE EXECUTE ON FUNCTION webhooks._history_slice(date) FROM PUBLIC;
-- end sql/src/store/_history_slice.sql
