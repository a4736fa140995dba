package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// gapResult is webhooks.find_sequence_gaps() over a window of numeric ids
// with known holes (scenario 5).
type gapResult struct {
	Available bool      `json:"available"`
	Note      string    `json:"note,omitempty"`
	Window    int64     `json:"window"`
	Expected  int64     `json:"expected_gaps"`
	Found     int64     `json:"found_gaps"`
	Correct   bool      `json:"correct"`
	MS        []float64 `json:"runs_ms"`
	BestMS    float64   `json:"best_ms"`
	Plan      string    `json:"plan,omitempty"`
	// TableRows is how many keys webhooks.keys then holds.
	TableRows int64 `json:"table_rows"`
}

// gapDetection times webhooks.find_sequence_gaps over a window of numeric
// ids with a known set of holes, when the function exists.
func gapDetection(ctx context.Context, pool *pgxpool.Pool, window int64, log *slog.Logger) gapResult {
	g := gapResult{Window: window}
	var ok bool
	if err := pool.QueryRow(ctx, `SELECT to_regproc('webhooks.find_sequence_gaps') IS NOT NULL`).Scan(&ok); err != nil || !ok {
		g.Note = "webhooks.find_sequence_gaps does not exist in this schema version: skipped"
		return g
	}
	g.Available = true
	const every = 997 // every 997th id never arrives
	// Processed events of today, in history with their keys (the window's
	// ids are read from webhooks.keys).
	_, err := pool.Exec(ctx, `
		WITH h AS (
			INSERT INTO webhooks.history (id, provider, external_id, event_type, status, payload, source, received_at, updated_at, claimed_at, processed_at, attempts)
			SELECT nextval(pg_get_serial_sequence('webhooks.inbox', 'id')), 'seqbench', g::text, 'job.completed', 'processed', '{"seq": true}'::jsonb,
			       'webhook', now(), now(), now(), now(), 1
			FROM generate_series(1, $1::bigint) AS g WHERE g % $2 <> 0
			RETURNING provider, external_id, id, received_at)
		INSERT INTO webhooks.keys (provider, external_id, event_id, received_at)
		SELECT provider, external_id, id, received_at FROM h`, window, every)
	if err != nil {
		g.Note = "load: " + err.Error()
		return g
	}
	g.Expected = window / every
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) webhooks.keys`); err != nil {
		log.Warn("vacuum", "error", err)
	}
	_ = pool.QueryRow(ctx, `SELECT reltuples::bigint FROM pg_class WHERE oid = 'webhooks.keys'::regclass`).Scan(&g.TableRows)
	best := 0.0
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.find_sequence_gaps('seqbench', 1, $1)`, window).Scan(&g.Found); err != nil {
			g.Note = "find_sequence_gaps: " + err.Error()
			return g
		}
		ms := round3(float64(time.Since(t0)) / 1e6)
		g.MS = append(g.MS, ms)
		if i == 0 || ms < best {
			best = ms
		}
	}
	g.BestMS = best
	g.Correct = g.Found == g.Expected
	var inner bool
	_ = pool.QueryRow(ctx, `SELECT to_regprocedure('webhooks._sequence_gaps(text,bigint,bigint)') IS NOT NULL`).Scan(&inner)
	if inner {
		// The inlinable SQL function shows the real plan, under the
		// settings the wrapper runs it with (find_sequence_gaps sets jit = off).
		var set []string
		_ = pool.QueryRow(ctx, `SELECT coalesce(array_agg('SET LOCAL ' || split_part(c, '=', 1) || ' = ' || quote_literal(split_part(c, '=', 2))), '{}')
			FROM pg_proc, unnest(proconfig) AS c
			WHERE oid = 'webhooks.find_sequence_gaps(text,bigint,bigint)'::regprocedure AND c NOT LIKE 'search_path=%'`).Scan(&set)
		g.Plan = explainWith(ctx, pool, set, `SELECT count(*) FROM webhooks._sequence_gaps('seqbench', 1, $1)`, window)
	} else {
		g.Plan = explain(ctx, pool, `SELECT count(*) FROM webhooks.find_sequence_gaps('seqbench', 1, $1)`, window)
	}
	log.Info("gap detection", "window", window, "best_ms", g.BestMS, "correct", g.Correct)
	return g
}
