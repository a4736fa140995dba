-- +goose Up
-- Drops three CHECK constraints of webhooks.events that only restate what
-- the functions writing these columns already guarantee:
--   events_trace_parent_check, events_trace_link_check: ingest_webhook()
--     stores a trace_parent only when it is a well-formed W3C traceparent
--     (55 bytes), and replay() only moves it to trace_link;
--   events_order_check: order_num, order_text and order_held are written
--     with order_key by _order_ingest(), set_ordering() and the ordering
--     triggers, never alone.
-- Nobody but those SECURITY DEFINER functions writes webhooks.events.
--
-- Why: PostgreSQL parses every CHECK of a table from its stored text and
-- compiles it at the start of each INSERT or UPDATE statement, and ingest
-- writes one row per statement. With these three, the INSERT in
-- ingest_webhook() grew past the point where each statement's executor
-- memory is handed back to the operating system and faulted in again: one
-- more page fault per delivery, 5,000 calls of ingest_webhook() on a
-- provider without ordering took 6,900 page faults and 730 ms of backend
-- CPU against 1,900 and 500 ms without them (1,800 and 430 ms before
-- ordered processing existed). bench/REPORT.md measures ingest before and
-- after ordered processing side by side. Dropping a CHECK takes a brief
-- ACCESS EXCLUSIVE lock and reads no rows.
ALTER TABLE webhooks.events
    DROP CONSTRAINT IF EXISTS events_trace_parent_check,
    DROP CONSTRAINT IF EXISTS events_trace_link_check,
    DROP CONSTRAINT IF EXISTS events_order_check;
