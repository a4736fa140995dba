-- webhooks.check_status: every check with its latest recorded result, for the
-- status page, /api/status and psql. A plain view: it reads one index entry
-- of check_results per check. ok is NULL for a check that never ran.
CREATE VIEW webhooks.check_status AS
SELECT c.name,
       c.family,
       c.description,
       c.min_ok,
       c.max_ok,
       c.enabled,
       r.run_at,
       r.value,
       r.ok,
       r.error
FROM webhooks.checks AS c
LEFT JOIN LATERAL (
    SELECT cr.run_at, cr.value, cr.ok, cr.error
    FROM webhooks.check_results AS cr
    WHERE cr.name = c.name
    ORDER BY cr.run_at DESC
    LIMIT 1
) AS r ON true;

REVOKE ALL ON TABLE webhooks.check_status FROM PUBLIC;

COMMENT ON VIEW webhooks.check_status IS
  'Every anomaly check with its thresholds and its latest result from webhooks.run_checks() (run_at, value, ok, error).';
