-- pginbox from psql: the whole life of two webhook events, with SQL only.
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f examples/psql/walkthrough.sql
--
-- Needs a database migrated with pginbox (`pginbox migrate`). It writes only
-- events of the provider 'walkthrough' (deleted first, so it can run again)
-- and the demo table app.jobs_done. The comments show what psql prints in a
-- fresh database (ids differ in one that has seen events), and expect()
-- checks the key outcomes as it goes: any surprise stops it with an error.

\set ON_ERROR_STOP on
\set QUIET on
\pset footer off
SET client_min_messages = warning;

-- expect() raises unless got = want: the walk-through checks itself.
CREATE FUNCTION pg_temp.expect(what text, got anyelement, want anyelement) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF got IS DISTINCT FROM want THEN
        RAISE EXCEPTION 'walkthrough: % is %, expected %', what, got, want;
    END IF;
END $$;

DELETE FROM webhooks.events WHERE provider = 'walkthrough';
CREATE SCHEMA IF NOT EXISTS app;
CREATE TABLE IF NOT EXISTS app.jobs_done (
    job_id  text        NOT NULL,
    done_at timestamptz NOT NULL DEFAULT now()
);
DELETE FROM app.jobs_done WHERE job_id LIKE 'walk\_%';
\set QUIET off

\echo
\echo '1. Ingest. The provider delivers job walk_1; the key (provider, external_id) in webhooks.keys decides.'
SELECT * FROM webhooks.ingest_webhook('walkthrough', 'walk_1', 'job.completed',
                                      '{"job_id": "walk_1", "status": "COMPLETED"}');
--  event_id | outcome
-- ----------+---------
--         1 | created
SELECT id AS job1 FROM webhooks.events WHERE provider = 'walkthrough' AND external_id = 'walk_1' \gset

\echo 'The same delivery again (providers retry): nothing is written.'
SELECT * FROM webhooks.ingest_webhook('walkthrough', 'walk_1', 'job.completed',
                                      '{"job_id": "walk_1", "status": "COMPLETED"}');
--  event_id |  outcome
-- ----------+-----------
--         1 | duplicate

\echo 'A redelivery with a corrected payload while the event is still pending: the payload is reconciled.'
SELECT * FROM webhooks.ingest_webhook('walkthrough', 'walk_1', 'job.completed',
                                      '{"job_id": "walk_1", "status": "COMPLETED", "v": 2}');
--  event_id | outcome
-- ----------+---------
--         1 | updated

\echo 'A second job. (Neither the duplicate nor the corrected redelivery drew an id: a stored key is answered by a look-up in webhooks.keys, and only a new key takes one.)'
SELECT * FROM webhooks.ingest_webhook('walkthrough', 'walk_2', 'job.failed', '{"job_id": "walk_2", "status": "ERROR"}');
--  event_id | outcome
-- ----------+---------
--         2 | created
SELECT id AS job2 FROM webhooks.events WHERE provider = 'walkthrough' AND external_id = 'walk_2' \gset

SELECT external_id, status, attempts, payload->>'v' AS v
FROM webhooks.events WHERE provider = 'walkthrough' ORDER BY id;
--  external_id | status  | attempts | v
-- -------------+---------+----------+---
--  walk_1      | pending |        0 | 2
--  walk_2      | pending |        0 |

\echo
\echo '2. Claim, in a transaction of its own (psql autocommits): SKIP LOCKED, attempts + 1, a lease.'
SELECT external_id, status, attempts, locked_by, locked_until > now() AS leased
FROM webhooks.claim('psql-worker', 10, '5 minutes') ORDER BY id;
--  external_id |   status   | attempts |  locked_by  | leased
-- -------------+------------+----------+-------------+--------
--  walk_1      | processing |        1 | psql-worker | t
--  walk_2      | processing |        1 | psql-worker | t

\echo 'Nothing else is claimable now: another worker gets no rows.'
SELECT count(*) AS claimed_by_other FROM webhooks.claim('other-worker', 10);
--  claimed_by_other
-- ------------------
--                 0

\echo
\echo '3. Complete, fenced on (event, worker, attempt). A stale attempt or another worker is refused:'
SELECT webhooks.complete(:job1, 'psql-worker', 2) AS wrong_attempt,
       webhooks.complete(:job1, 'other-worker', 1) AS wrong_worker;
--  wrong_attempt | wrong_worker
-- ---------------+--------------
--  f             | f

\echo 'The real completion commits together with the handler''s own write; false would mean ROLLBACK.'
BEGIN;
INSERT INTO app.jobs_done (job_id) VALUES ('walk_1');
SELECT webhooks.complete(:job1, 'psql-worker', 1) AS completed \gset
\if :completed
    COMMIT;
\else
    ROLLBACK;
\endif
SELECT pg_temp.expect('complete(walk_1)', :'completed'::boolean, true) \gset

SELECT external_id, status, processed_at IS NOT NULL AS has_processed_at, locked_by
FROM webhooks.events WHERE id = :job1;
--  external_id |  status   | has_processed_at | locked_by
-- -------------+-----------+------------------+-----------
--  walk_1      | processed | t                |

\echo 'A late redelivery of a processed event is a duplicate, whatever its payload.'
SELECT outcome FROM webhooks.ingest_webhook('walkthrough', 'walk_1', 'job.completed', '{"job_id": "walk_1", "v": 3}');
--   outcome
-- -----------
--  duplicate

\echo
\echo '4. Fail: the handler of walk_2 failed. Back to pending after a backoff (1 s, 2 s, 4 s ... up to 1 h).'
SELECT webhooks.fail(:job2, 'psql-worker', 1, 'upstream timeout') AS new_status;
--  new_status
-- ------------
--  pending
SELECT status, attempts, last_error, run_after > now() AS backing_off
FROM webhooks.events WHERE id = :job2;
--  status  | attempts |    last_error    | backing_off
-- ---------+----------+------------------+-------------
--  pending |        1 | upstream timeout | t

\echo 'Not claimable until run_after. For the demo, this event gets 2 attempts instead of 25; wait out the backoff.'
UPDATE webhooks.events SET max_attempts = 2 WHERE id = :job2;
SELECT pg_sleep(1.5) \gset
SELECT external_id, attempts FROM webhooks.claim('psql-worker', 10) ORDER BY id;
--  external_id | attempts
-- -------------+----------
--  walk_2      |        2
SELECT webhooks.fail(:job2, 'psql-worker', 2, 'upstream timeout again') AS new_status;
--  new_status
-- ------------
--  dead

\echo
\echo '5. Replay: the only way a dead or processed event runs again; audited in webhooks.replays.'
SELECT webhooks.replay(:job2, 'upstream fixed, retry by hand');
SELECT status, attempts, last_error FROM webhooks.events WHERE id = :job2;
--  status  | attempts | last_error
-- ---------+----------+------------
--  pending |        0 |
SELECT reason, previous_status, previous_attempts FROM webhooks.replays WHERE event_id = :job2;
--             reason             | previous_status | previous_attempts
-- -------------------------------+-----------------+-------------------
--  upstream fixed, retry by hand | dead            |                 2

\echo 'This time the handler succeeds.'
SELECT attempts AS attempt FROM webhooks.claim('psql-worker', 10) \gset
BEGIN;
INSERT INTO app.jobs_done (job_id) VALUES ('walk_2');
SELECT webhooks.complete(:job2, 'psql-worker', :attempt) AS completed \gset
\if :completed
    COMMIT;
\else
    ROLLBACK;
\endif
SELECT pg_temp.expect('complete(walk_2)', :'completed'::boolean, true) \gset

\echo
\echo 'Where it ends: every event processed once, one app row each.'
SELECT e.external_id, e.status, e.attempts, count(d.job_id) AS app_rows
FROM webhooks.events AS e LEFT JOIN app.jobs_done AS d ON d.job_id = e.external_id
WHERE e.provider = 'walkthrough'
GROUP BY e.id, e.external_id, e.status, e.attempts ORDER BY e.id;
--  external_id |  status   | attempts | app_rows
-- -------------+-----------+----------+----------
--  walk_1      | processed |        1 |        1
--  walk_2      | processed |        1 |        1

SELECT pg_temp.expect('events processed',
    (SELECT count(*) FROM webhooks.events WHERE provider = 'walkthrough' AND status = 'processed'), 2::bigint) \gset
SELECT pg_temp.expect('app rows',
    (SELECT count(*) FROM app.jobs_done WHERE job_id IN ('walk_1', 'walk_2')), 2::bigint) \gset
