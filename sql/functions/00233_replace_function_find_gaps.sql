-- +goose Up
-- begin sql/src/recover/find_gaps.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.find_gaps is the anti-join: expected ids past their deadline with
-- no event and no tombstone, oldest deadline first.
--
-- It reads only open expectations (met_at IS NULL) past their deadline,
-- through the partial index expectations_open_idx, and probes events and
-- tombstones by their primary keys: its cost follows the open, overdue
-- expectations, not the size of the tables. A plain SQL function with one
-- SELECT, so the planner inlines it and EXPLAIN shows the real plan.
--
-- It runs with its caller's rights. status_url is NULL for a caller that may
-- not select webhooks.expectations.status_url (it may hold a presigned token).
CREATE OR REPLACE FUNCTION webhooks.find_gaps(provider text DEFAULT NULL)
RETURNS TABLE (provider text, external_id text, status_url text, deadline timestamptz)
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT x.provider, x.external_id, x.status_url, x.deadline
    FROM webhooks._expectations_masked AS x
    WHERE x.met_at IS NULL
      AND x.deadline < now()
      AND (find_gaps.provider IS NULL OR x.provider = find_gaps.provider)
      AND NOT EXISTS (
          SELECT FROM webhooks.keys AS k
          WHERE k.provider = x.provider AND k.external_id = x.external_id)
      AND NOT EXISTS (
          SELECT FROM webhooks.tombstones AS t
          WHERE t.provider = x.provider AND t.external_id = x.external_id)
    ORDER BY x.deadline, x.provider, x.external_id
$$;
-- +goose StatementEnd

REVOKE EXECUTE ON FUNCTION webhooks.find_gaps(text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.find_gaps(text) IS
  'Expected ids (webhooks.expect()) past their deadline with no event and no tombstone, oldest deadline first; '
  'all providers when provider is NULL. Reads only open expectations (partial index expectations_open_idx). '
  'status_url is NULL unless the caller may select webhooks.expectations.status_url (grant_reader does not give it).';
-- end sql/src/recover/find_gaps.sql
