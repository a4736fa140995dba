-- +goose StatementBegin
-- webhooks._reconcile_lock_key is the advisory lock key reconcile() takes
-- with pg_try_advisory_xact_lock: the bytes of "pginrec" (0x7067696e726563),
-- next to the migration lock "pginbox" (0x7067696e626f78). A function rather
-- than a literal repeated in several places, so tools and tests can hold the
-- same lock: SELECT pg_advisory_xact_lock(webhooks._reconcile_lock_key()).
CREATE OR REPLACE FUNCTION webhooks._reconcile_lock_key()
RETURNS bigint
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT 31638899913811299::bigint  -- 0x7067696e726563, "pginrec"
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._reconcile_lock_key() IS
  'Private: the advisory lock key (31638899913811299 = 0x7067696e726563, "pginrec") that serialises '
  'reconcile() passes through pg_try_advisory_xact_lock.';
REVOKE EXECUTE ON FUNCTION webhooks._reconcile_lock_key() FROM PUBLIC;
