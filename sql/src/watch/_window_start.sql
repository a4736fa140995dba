-- +goose StatementBegin
-- webhooks._window_start is the start of a window of length span that ends
-- now: now() - span. It is declared IMMUTABLE, which it is not, on purpose:
-- the planner then evaluates it once, while it plans, and the bound on
-- received_at it gives is a constant, so the planner leaves every day slice
-- of webhooks.history before the window out of the plan. Written as
-- now() - span, the bound is only stable: the executor prunes the slices
-- when the statement starts, after the planner has opened and locked every
-- slice and its indexes (at a year of history, about 2,600 locks and a
-- tenth of a second of planning per refresh, and much more on a new
-- connection). The materialized views read their window through it: a
-- view's query is planned afresh at every refresh, in the refreshing
-- transaction, whose now() it so reads. Never use it where a plan is kept
-- (a prepared statement, a PL/pgSQL statement): the plan would keep the
-- time it was planned at.
CREATE OR REPLACE FUNCTION webhooks._window_start(span interval)
RETURNS timestamptz
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.now() - _window_start.span
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._window_start(interval) IS
  'Private: now() - span, declared IMMUTABLE so that the planner folds it into a constant and leaves the day slices of '
  'webhooks.history before the window out of the plan. For the materialized views'' windows only (planned afresh at '
  'every refresh); a kept plan would keep the time it was planned at.';
REVOKE EXECUTE ON FUNCTION webhooks._window_start(interval) FROM PUBLIC;
