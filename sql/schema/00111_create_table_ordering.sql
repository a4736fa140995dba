-- +goose Up
-- Ordered processing per key, opt-in per provider (set_ordering()).
--
-- webhooks.ordering holds the settings: one row per provider that wants
-- strict order per key. Events of that provider whose payload has a value at
-- key_path form one sequence per value, ordered by the value at order_path
-- (numbers as numbers, then text as text), then received_at, then id.
--
-- webhooks.events gets five columns, all filled by pginbox itself:
--   order_key    the event's sequence (the value at key_path, as text); NULL:
--                the event is not ordered (no ordering for its provider, or
--                no usable value at the path).
--   order_num    the order value when it is a JSON number.
--   order_text   the order value when it is a JSON string (or boolean).
--                Both NULL when the provider has no order_path.
--   order_held   true while the event must wait: an earlier event of its
--                sequence is not processed yet, or another event of it is
--                being processed. claim() and the serve paths never hand out
--                a held event. Kept by triggers on every status change.
--   out_of_order true once the event was processed after a later event of
--                its sequence had already been processed (it arrived late).
--
-- Adding them is instant on any size of table: nullable columns and NOT NULL
-- columns with a constant default change only the catalog (no rewrite), and
-- the CHECK is NOT VALID (every existing row satisfies it anyway: the new
-- columns read NULL and false). The two index builds below read the table;
-- like 00087's they block ingest on a large table until they finish: to
-- upgrade without that pause, create them CONCURRENTLY first with the same
-- statements (IF NOT EXISTS makes this migration skip them), and swap the
-- claim index by hand the same way.
CREATE TABLE webhooks.ordering (
    provider    text        PRIMARY KEY CHECK (btrim(provider) <> '' AND octet_length(provider) <= 64),
    key_path    text        NOT NULL CHECK (btrim(key_path) <> '' AND octet_length(key_path) <= 1000),
    order_path  text        CHECK (btrim(order_path) <> '' AND octet_length(order_path) <= 1000),
    dead_blocks boolean     NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON TABLE webhooks.ordering FROM PUBLIC;

COMMENT ON TABLE webhooks.ordering IS
  'Providers whose events are processed in strict order per key (set_ordering(), clear_ordering()).';
COMMENT ON COLUMN webhooks.ordering.key_path IS
  'SQL/JSON path to the sequence key in the payload (e.g. $.data.object.customer).';
COMMENT ON COLUMN webhooks.ordering.order_path IS
  'SQL/JSON path to the order value (e.g. $.created): numbers sort as numbers, text as text; NULL: by received_at, id.';
COMMENT ON COLUMN webhooks.ordering.dead_blocks IS
  'true: a dead event keeps its sequence waiting until it is replayed and processed; false: the sequence goes on.';

ALTER TABLE webhooks.events
    ADD COLUMN order_key    text,
    ADD COLUMN order_num    numeric,
    ADD COLUMN order_text   text,
    ADD COLUMN order_held   boolean NOT NULL DEFAULT false,
    ADD COLUMN out_of_order boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT events_order_check
        CHECK (order_key IS NOT NULL OR (order_num IS NULL AND order_text IS NULL AND NOT order_held)) NOT VALID;

COMMENT ON COLUMN webhooks.events.order_key IS
  'The event''s sequence for ordered processing (the payload''s value at webhooks.ordering.key_path, as text); '
  'NULL: not ordered.';
COMMENT ON COLUMN webhooks.events.order_num IS
  'The order value within its sequence when it is a JSON number (webhooks.ordering.order_path).';
COMMENT ON COLUMN webhooks.events.order_text IS
  'The order value within its sequence when it is a JSON string or boolean, compared byte by byte.';
COMMENT ON COLUMN webhooks.events.order_held IS
  'true while an earlier event of its sequence is not processed (or another of it is being processed): '
  'not handed out by claim() or the runner.';
COMMENT ON COLUMN webhooks.events.out_of_order IS
  'true when the event was processed after a later event of its sequence had been processed (a late arrival).';

-- The claim index, now without held events: claim() and _lock_pending()
-- walk only events they may hand out, however many wait behind the head of
-- their sequence (200 keys x 25 events: 200 entries, not 5,000). Both spell
-- out "NOT e.order_held" so cached generic plans still match the predicate.
-- Same name as before, so plans and reports keep reading the same.
CREATE INDEX IF NOT EXISTS events_claimable_ready_idx ON webhooks.events (run_after, id)
    WHERE status = 'pending' AND NOT order_held;
DROP INDEX IF EXISTS webhooks.events_claimable_idx;
ALTER INDEX webhooks.events_claimable_ready_idx RENAME TO events_claimable_idx;

-- Sequences, in order: the unfinished events of each. (provider,
-- order_key, false) holds the ones that are not held: the one in flight,
-- the runnable head, dead ones (a handful); (provider, order_key, true) the
-- held ones, in order; so the head of a sequence is the first entry of one
-- of the two, and whether one is in flight is read from the first, however
-- long the sequence. The order value's two columns are read through
-- coalesce() so that every entry compares with every other (numbers first,
-- then text, then events without an order value); queries spell these
-- expressions out exactly. Partial: unordered events (every provider
-- without ordering) never touch it, and an event leaves it when it is
-- processed, so marking an ordered event processed writes no entry here
-- (the late-arrival check reads webhooks.order_marks instead), and the
-- index holds what is waiting, not the history. Queries test
-- "status <> 'processed'" as the predicate says.
CREATE INDEX IF NOT EXISTS events_order_idx ON webhooks.events (
    provider, order_key, order_held,
    (coalesce(order_num, 'NaN'::numeric)), (coalesce(order_text, '') COLLATE "C"), received_at, id)
    WHERE order_key IS NOT NULL AND status <> 'processed';

-- The high-water mark of each sequence: where the latest processed event of
-- it (in sequence order) stands. An ordered event that becomes processed
-- while the mark is past it arrived late (out_of_order); then the mark moves
-- to the later of the two. One row per sequence ever processed, written by
-- the statement that marks events processed (_mark_processed(), the trigger
-- events_order_late), read by primary key; prune() deletes a mark with the
-- rows it stood for (marked_at older than keep_keys), drop_provider() with
-- its provider. The prior_ columns are the mark as it stood before the
-- transaction that last moved it (marked_at = that transaction's now()):
-- events processed in one transaction do not count against each other, as
-- a statement may write them in any order.
CREATE TABLE webhooks.order_marks (
    provider       text        NOT NULL,
    order_key      text        NOT NULL,
    order_num      numeric,
    order_text     text,
    received_at    timestamptz NOT NULL,
    event_id       bigint      NOT NULL,
    marked_at      timestamptz NOT NULL DEFAULT now(),
    prior_num      numeric,
    prior_text     text,
    prior_received timestamptz,
    prior_id       bigint,
    PRIMARY KEY (provider, order_key)
);
REVOKE ALL ON TABLE webhooks.order_marks FROM PUBLIC;

COMMENT ON TABLE webhooks.order_marks IS
  'Per ordered sequence, the place of its latest processed event (order value, received_at, id): an event '
  'processed before that place is marked out_of_order. Written when events are processed; pruned with them.';
COMMENT ON COLUMN webhooks.order_marks.marked_at IS
  'now() of the transaction that last moved the mark; events processed in that transaction compare with prior_*.';
COMMENT ON COLUMN webhooks.order_marks.prior_id IS
  'With prior_num, prior_text and prior_received: the mark before the transaction of marked_at moved it (NULL: none).';

-- Values the sequence index cannot hold.
--
-- webhooks.order_skipped counts, per provider and reason, the events of an
-- ordered provider left unordered because a value at key_path or
-- order_path could not be indexed (a key or a text order value over 255
-- bytes, a number over 255 bytes stored): such an event is stored and runs
-- unordered instead of failing its delivery (_order_values_at()). Written
-- at ingest (_order_ingest(), which also logs each such event with RAISE
-- LOG: its provider, external_id and reason) and by set_ordering() for the
-- pending events it reads again (one LOG line per call).
CREATE TABLE webhooks.order_skipped (
    provider         text        NOT NULL,
    reason           text        NOT NULL,
    events           bigint      NOT NULL DEFAULT 0 CHECK (events >= 0),
    first_at         timestamptz NOT NULL DEFAULT now(),
    last_at          timestamptz NOT NULL DEFAULT now(),
    last_external_id text,
    last_detail      text,
    PRIMARY KEY (provider, reason)
);
REVOKE ALL ON TABLE webhooks.order_skipped FROM PUBLIC;

COMMENT ON TABLE webhooks.order_skipped IS
  'Per ordered provider and reason (key, order text, order number): events left unordered because that value '
  'was too large to index; last_external_id and last_detail (its size) name the latest.';

-- Readers see the new table and columns: run grant_reader again for each
-- role it was run for (told apart as in 00101).
-- +goose StatementBegin
DO $$
DECLARE
    v_role text;
BEGIN
    FOR v_role IN
        SELECT DISTINCT r.rolname
        FROM pg_catalog.pg_attribute AS a
        CROSS JOIN LATERAL pg_catalog.aclexplode(a.attacl) AS acl
        JOIN pg_catalog.pg_roles AS r ON r.oid = acl.grantee
        JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
        WHERE a.attrelid = 'webhooks.events'::pg_catalog.regclass
          AND a.attname = 'id'
          AND acl.privilege_type = 'SELECT'
          AND acl.grantee <> c.relowner
          AND NOT EXISTS (
              SELECT FROM pg_catalog.pg_attribute AS pa
              CROSS JOIN LATERAL pg_catalog.aclexplode(pa.attacl) AS pacl
              WHERE pa.attrelid = a.attrelid AND pa.attname = 'payload'
                AND pacl.grantee = acl.grantee AND pacl.privilege_type = 'SELECT')
          AND NOT EXISTS (
              SELECT FROM pg_catalog.aclexplode(c.relacl) AS tacl
              WHERE tacl.grantee = acl.grantee AND tacl.privilege_type = 'SELECT')
          AND EXISTS (
              SELECT FROM pg_catalog.pg_proc AS p
              CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS facl
              WHERE p.oid = 'webhooks.find_gaps(text)'::pg_catalog.regprocedure
                AND facl.grantee = acl.grantee AND facl.privilege_type = 'EXECUTE')
        ORDER BY r.rolname
    LOOP
        PERFORM webhooks.grant_reader(v_role);
    END LOOP;
END;
$$;
-- +goose StatementEnd
