-- webhooks._expectations_masked is webhooks.expectations with status_url
-- shown only to a role that may read that column itself. A status_url may
-- carry a presigned token, so grant_reader leaves it out; find_gaps reads
-- through this view so that it works for every role that may call it and
-- shows status_url only to those allowed to see it.
--
-- A view reads its table with its owner's rights, but current_user inside it
-- is still the role running the query, so has_column_privilege() (evaluated
-- once per query, as an InitPlan) asks about the caller, after any SET ROLE.
-- Not a security_barrier view on purpose: the conditions of find_gaps are
-- pushed down to the table and its partial index expectations_open_idx; a
-- condition on status_url only ever sees the masked value.
CREATE VIEW webhooks._expectations_masked AS
SELECT x.provider,
       x.external_id,
       x.deadline,
       CASE WHEN (SELECT pg_catalog.has_column_privilege('webhooks.expectations', 'status_url', 'SELECT'))
            THEN x.status_url END AS status_url,
       x.created_at,
       x.met_at,
       x.checks
FROM webhooks.expectations AS x;

REVOKE ALL ON webhooks._expectations_masked FROM PUBLIC;

COMMENT ON VIEW webhooks._expectations_masked IS
  'Private (find_gaps): webhooks.expectations with status_url NULL unless the querying role may select '
  'expectations.status_url itself (grant_reader does not give it).';
