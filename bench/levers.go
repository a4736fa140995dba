package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// lever is one change to the row-lock variant, measured on its own beside
// it: a different worker count, or a schema change applied to the variants'
// scratch database for the lever's own rounds and undone after them. None
// of them ships; they show what each would buy.
type lever struct {
	name    string
	what    string
	workers int
	// apply changes the scratch database and returns how to undo it; nil
	// when the lever changes nothing there.
	apply func(ctx context.Context, pool *pgxpool.Pool) (func(context.Context) error, error)
}

// The levers, by name.
const (
	leverFewWorkers = "row-lock, 2 workers"
	leverLeanIndex  = "row-lock, lean indexes"
	leverSpread     = "row-lock, spread pick"
	leverBoth       = "row-lock, 2 workers, lean indexes"
)

// leanDropped are the indexes a processed event enters that processing
// itself never reads: the operator views' status indexes and prune()'s.
var leanDropped = []string{"webhooks.events_status_received_idx", "webhooks.events_status_provider_received_idx", "webhooks.events_unpruned_idx"}

// spreadLanes is how many lanes the spread pick divides the queue into.
const spreadLanes = 16

// levers returns the levers in the order the table shows them.
func levers() []lever {
	return []lever{
		{name: leverFewWorkers, workers: 2,
			what: "the default variant with 2 workers instead of 8 (fewer statements in the server at once than its 2 cores can run; PGINBOX_WORKERS=2)"},
		{name: leverLeanIndex, workers: 8, apply: applyLeanIndexes,
			what: "the default variant without the three indexes a processed event enters that processing never reads (events_status_received_idx, events_status_provider_received_idx, events_unpruned_idx): fewer index entries per event; the update stays non-HOT, because the claim index's predicate names status"},
		{name: leverSpread, workers: 8, apply: applySpreadPick,
			what: fmt.Sprintf("the default variant with a pick that spreads the workers over the queue: %d lanes (id %% %d) with an index each worker scans from its own lane on, so that workers do not step over each other's locked and just-processed rows at the head of one index", spreadLanes, spreadLanes)},
		{name: leverBoth, workers: 2, apply: applyLeanIndexes,
			what: "the two levers that helped, together: 2 workers and the lean index set"},
	}
}

// applyLeanIndexes drops leanDropped and returns how to create them again.
func applyLeanIndexes(ctx context.Context, pool *pgxpool.Pool) (func(context.Context) error, error) {
	var defs []string
	for _, name := range leanDropped {
		var def string
		if err := pool.QueryRow(ctx, `SELECT pg_get_indexdef($1::regclass)`, name).Scan(&def); err != nil {
			return nil, fmt.Errorf("lean indexes: read %s: %w", name, err)
		}
		defs = append(defs, def)
	}
	for _, name := range leanDropped {
		if _, err := pool.Exec(ctx, `DROP INDEX `+name); err != nil {
			return nil, fmt.Errorf("lean indexes: drop %s: %w", name, err)
		}
	}
	return func(ctx context.Context) error {
		for _, def := range defs {
			if _, err := pool.Exec(ctx, def); err != nil {
				return fmt.Errorf("lean indexes: restore: %w", err)
			}
		}
		return nil
	}, nil
}

// spreadPick is _lock_pending() with the pick divided into lanes: the same
// eligibility, oldest first within a lane, lanes taken from the worker's own
// on until the batch is full.
const spreadPick = `
CREATE OR REPLACE FUNCTION webhooks._lock_pending(worker text, max_events integer)
RETURNS SETOF webhooks.events
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_paused text[];
    v_ids    bigint[] := '{}';
    v_start  integer := abs(hashtext(_lock_pending.worker)) %% %[1]d;
    v_lane   integer;
BEGIN
    SELECT coalesce(array_agg(pp.provider), '{}') INTO v_paused FROM webhooks.paused_providers AS pp;
    FOR v_i IN 0..%[1]d - 1 LOOP
        v_lane := (v_start + v_i) %% %[1]d;
        v_ids := v_ids || ARRAY(
            SELECT e.id FROM webhooks.inbox AS e
            WHERE (e.id %% %[1]d) = v_lane AND e.status = 'pending' AND NOT e.order_held
              AND e.run_after <= now() AND e.attempts < e.max_attempts AND e.provider <> ALL (v_paused)
            ORDER BY (e.id %% %[1]d), e.run_after, e.id
            LIMIT _lock_pending.max_events - cardinality(v_ids)
            FOR UPDATE SKIP LOCKED);
        EXIT WHEN cardinality(v_ids) >= _lock_pending.max_events;
    END LOOP;
    RETURN QUERY
    SELECT e.id, e.provider, e.external_id, e.event_type, 'processing'::text, e.payload, e.source, e.received_at,
           e.revision, e.updated_at, now(), e.processed_at, e.attempts + 1, e.max_attempts, e.run_after,
           _lock_pending.worker, e.locked_until, e.last_error, e.payload_pruned_at, e.seq, e.body_sha256,
           e.order_key, e.order_num, e.order_text, e.order_held, e.out_of_order, e.trace_parent, e.trace_link
    FROM unnest(v_ids) WITH ORDINALITY AS x(id, n)
    JOIN webhooks.inbox AS e ON e.id = x.id
    ORDER BY x.n;
END;
$$`

// applySpreadPick installs spreadPick and its lane index, and returns how to
// put _lock_pending() back.
func applySpreadPick(ctx context.Context, pool *pgxpool.Pool) (func(context.Context) error, error) {
	var orig string
	if err := pool.QueryRow(ctx, `SELECT pg_get_functiondef('webhooks._lock_pending(text, integer)'::regprocedure)`).Scan(&orig); err != nil {
		return nil, fmt.Errorf("spread pick: read _lock_pending: %w", err)
	}
	index := fmt.Sprintf(`CREATE INDEX bench_events_lane_idx ON webhooks.inbox ((id %% %d), run_after, id)
		WHERE status = 'pending' AND NOT order_held`, spreadLanes)
	for _, stmt := range []string{index, fmt.Sprintf(spreadPick, spreadLanes)} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			return nil, fmt.Errorf("spread pick: %w", err)
		}
	}
	return func(ctx context.Context) error {
		if _, err := pool.Exec(ctx, orig); err != nil {
			return fmt.Errorf("spread pick: restore _lock_pending: %w", err)
		}
		if _, err := pool.Exec(ctx, `DROP INDEX webhooks.bench_events_lane_idx`); err != nil {
			return fmt.Errorf("spread pick: drop the lane index: %w", err)
		}
		return nil
	}, nil
}

// VsRiver is the named variant's events/s over River's jobs/s in the same
// run, or 0 when either is missing.
func (v *variantsResult) VsRiver(name string) float64 {
	p, r := v.Find(name), v.RiverPoint()
	if p == nil || r == nil || r.PerS <= 0 {
		return 0
	}
	return p.PerS / r.PerS
}
