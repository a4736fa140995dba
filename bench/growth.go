package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

type growthPoint struct {
	Rows        int64              `json:"rows"`
	LoadSeconds float64            `json:"load_seconds"`
	IngestPerS  float64            `json:"ingest_per_s"`
	IngestMS    dist               `json:"ingest_call_ms"`
	ProcessPerS float64            `json:"process_per_s"`
	Processed   int64              `json:"processed"`
	TableMiB    float64            `json:"table_mib"`
	IndexMiB    map[string]float64 `json:"index_mib"`
	ClaimPlan   string             `json:"claim_plan,omitempty"`
	// WAL bytes per ingest and per processed event, and pg_stat_statements
	// of the hot statements at this size (buffers read and full-page
	// images per call).
	IngestWAL float64 `json:"ingest_wal_bytes_per_delivery"`
	// PostgreSQL CPU per ingest and per processed event, in µs (less
	// sensitive to other load on the machine than the rates).
	IngestPGus  float64 `json:"ingest_postgres_cpu_us"`
	ProcessPGus float64 `json:"process_postgres_cpu_us"`
	// IngestSlices are the rates of the ingest's slices; IngestPerS is the
	// best (other load only ever slows a slice down).
	IngestSlices []float64  `json:"ingest_slice_rates"`
	ProcessWAL   float64    `json:"process_wal_bytes_per_event"`
	Statements   []stmtStat `json:"statements,omitempty"`
	IngestPlan   string     `json:"ingest_plan,omitempty"`
	Audit        bool       `json:"audit_ok"`
}

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
	TableRows int64     `json:"table_rows"`
}

type growthResult struct {
	Points []growthPoint `json:"points"`
	// IngestRatio and ProcessRatio: the largest size over the empty table.
	IngestRatio  float64   `json:"ingest_ratio"`
	ProcessRatio float64   `json:"process_ratio"`
	Gaps         gapResult `json:"gap_detection"`
}

// bulkLoad adds processed events [from, to) with INSERT ... SELECT
// generate_series, in chunks on two connections, with random-order keys like
// real provider ids.
func bulkLoad(ctx context.Context, pool *pgxpool.Pool, from, to int64) error {
	const chunk = 250_000
	note := padding[:200]
	work := make(chan [2]int64)
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				_, err := pool.Exec(ctx, `
					INSERT INTO webhooks.events (provider, external_id, event_type, status, payload, source,
					                             received_at, updated_at, claimed_at, processed_at, attempts)
					SELECT 'sume', 'evt_' || md5(g::text), 'job.completed', 'processed',
					       jsonb_build_object('event', 'job.completed', 'job_id', 'evt_' || md5(g::text), 'status', 'COMPLETED',
					                          'data', jsonb_build_object('note', $3::text)),
					       'webhook', t.ts, t.ts, t.ts, t.ts + interval '20 ms', 1
					FROM generate_series($1::bigint, $2::bigint) AS g,
					     LATERAL (SELECT now() - interval '30 days' + g * interval '100 ms') AS t (ts)`, r[0], r[1], note)
				if err != nil {
					errc <- fmt.Errorf("bulk load: %w", err)
					return
				}
			}
		}()
	}
	for lo := from; lo < to && ctx.Err() == nil; lo += chunk {
		select {
		case work <- [2]int64{lo + 1, min(lo+chunk, to)}:
		case err := <-errc:
			close(work)
			wg.Wait()
			return err
		}
	}
	close(work)
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return ctx.Err()
}

const claimPickSQL = `SELECT e.id FROM webhooks.events AS e
WHERE e.status = 'pending' AND e.run_after <= now() AND e.attempts < e.max_attempts
ORDER BY e.run_after, e.id LIMIT 100 FOR UPDATE SKIP LOCKED`

const ingestUpsertSQL = `INSERT INTO webhooks.events AS e (provider, external_id, event_type, payload, source)
VALUES ('explain', 'evt_explain_new', 'job.completed', '{"a": 1}'::jsonb, 'webhook')
ON CONFLICT ON CONSTRAINT events_provider_external_id_key DO UPDATE
    SET payload = excluded.payload, event_type = excluded.event_type, revision = e.revision + 1, updated_at = now()
    WHERE e.status = 'pending' AND e.payload IS DISTINCT FROM excluded.payload
RETURNING e.id, e.revision`

// explain runs EXPLAIN (ANALYZE, BUFFERS) in a transaction it rolls back.
func explain(ctx context.Context, pool *pgxpool.Pool, q string, args ...any) string {
	return explainWith(ctx, pool, nil, q, args...)
}

// explainWith is explain after the SET LOCAL statements in set.
func explainWith(ctx context.Context, pool *pgxpool.Pool, set []string, q string, args ...any) string {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "explain: " + err.Error()
	}
	defer tx.Rollback(context.Background())
	for _, s := range set {
		if _, err := tx.Exec(ctx, s); err != nil {
			return "explain: " + err.Error()
		}
	}
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+q, args...)
	if err != nil {
		return "explain: " + err.Error()
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return "explain: " + err.Error()
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// runGrowth is scenario 5.
func runGrowth(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*growthResult, []audit, error) {
	dbURL, err := env.scratch(ctx, "growth")
	if err != nil {
		return nil, nil, err
	}
	defer env.dropScratch(context.Background(), "growth")
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	ingest, err := newPool(ctx, dbURL, 16, "bench-ingest", "synchronous_commit", "on")
	if err != nil {
		return nil, nil, err
	}
	defer ingest.Close()
	if err := warm(ctx, ingest, 16, callIngest(ingestSQL)); err != nil {
		return nil, nil, err
	}
	res := &growthResult{}
	var audits []audit
	var backend int
	_ = probe.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	postmaster := postmasterPID(backend)
	var have int64
	pointNo := 0
	// Warm-up, not recorded: the first ingest and the first runner on a new
	// database pay for cold caches.
	if !cfg.quick {
		v := &sqlVariant{name: "warm", mode: "unique", provider: "g-warm", space: "g-warm", pool: ingest, conns: 16,
			call: callIngest(ingestSQL), eventOf: func(p int64) int64 { return p }, outcomes: map[string]int64{}}
		v.slice(ctx, 500*time.Millisecond, probe)
		if _, _, err := runWorkers(ctx, dbURL, probe, 8, 100, 30*time.Second, log); err != nil {
			return res, audits, err
		}
	}
	for _, size := range cfg.growthSizes {
		p := growthPoint{Rows: size, IndexMiB: map[string]float64{}}
		if size > have {
			log.Info("growth: loading", "rows", size)
			t0 := time.Now()
			if err := bulkLoad(ctx, probe, have, size); err != nil {
				return res, audits, err
			}
			have = size
			if _, err := probe.Exec(ctx, `VACUUM (ANALYZE) webhooks.events`); err != nil {
				return res, audits, err
			}
			p.LoadSeconds = round1(time.Since(t0).Seconds())
		}
		// Start every point with clean buffers: the bulk load's dirty
		// pages are not the measurement's to write.
		if _, err := probe.Exec(ctx, `CHECKPOINT`); err != nil {
			log.Warn("checkpoint", "error", err)
		}
		// The same provider as the loaded rows and keys of the same shape
		// ("evt_" + random hex), so new keys land all over the unique
		// index as they would for one busy provider; this point's rows
		// are told apart by received_at.
		provider := "sume"
		offset := int64(pointNo+1) << 40
		pointNo++
		since := time.Now()
		if err := probe.QueryRow(ctx, `SELECT now()`).Scan(&since); err != nil {
			return res, audits, err
		}
		pgssReset(ctx, env, probe)
		v := &sqlVariant{name: "ingest_webhook", mode: "unique", provider: provider, space: "evt", pool: ingest, conns: 16,
			call: callIngest(ingestSQL), eventOf: func(p int64) int64 { return p + offset }, outcomes: map[string]int64{}, postmaster: postmaster}
		for i := 0; i < 3; i++ {
			v.slice(ctx, cfg.growthDur/3, probe)
		}
		if err := ctx.Err(); err != nil {
			return res, audits, err
		}
		r := v.result()
		p.IngestMS, p.IngestWAL, p.IngestPGus, p.IngestSlices = r.CallMS, r.WALBytesPer, r.PGCPUus, r.SliceRates
		for _, x := range r.SliceRates {
			p.IngestPerS = max(p.IngestPerS, x)
		}
		_, _ = probe.Exec(ctx, `ANALYZE webhooks.events`)
		p.ClaimPlan = explain(ctx, probe, claimPickSQL)
		p.IngestPlan = explain(ctx, probe, ingestUpsertSQL)
		w0 := readWalPos(ctx, probe)
		took, use, err := runWorkers(ctx, dbURL, probe, 8, 100, 30*time.Second, log)
		if err != nil {
			return res, audits, err
		}
		w1 := readWalPos(ctx, probe)
		p.Statements = pgssMatch(ctx, env, probe, `ingest_webhook|webhooks\.claim|webhooks\.complete|on_event`)
		n, _, rate := handledRateSince(ctx, probe, provider, since)
		p.Processed, p.ProcessPerS = n, round1(rate)
		if n > 0 {
			p.ProcessWAL = round1(float64(w1.lsn-w0.lsn) / float64(n))
			p.ProcessPGus = round1(use.Postgres * took.Seconds() * 1e6 / float64(n))
		}
		in := v.auditInput(fmt.Sprintf("growth %d rows", size), "")
		in.handler, in.since = true, since
		a, err := runAudit(ctx, probe, in)
		if err != nil {
			return res, audits, err
		}
		p.Audit = a.OK
		audits = append(audits, a)
		var tbl int64
		_ = probe.QueryRow(ctx, `SELECT pg_table_size('webhooks.events')`).Scan(&tbl)
		p.TableMiB = round1(float64(tbl) / (1 << 20))
		rows, err := probe.Query(ctx, `SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'webhooks.events'::regclass`)
		if err == nil {
			for rows.Next() {
				var name string
				var sz int64
				if rows.Scan(&name, &sz) == nil {
					p.IndexMiB[name] = round1(float64(sz) / (1 << 20))
				}
			}
			rows.Close()
		}
		res.Points = append(res.Points, p)
		log.Info("growth", "rows", size, "ingest_per_s", p.IngestPerS, "process_per_s", p.ProcessPerS)
	}
	if len(res.Points) > 1 {
		first, last := res.Points[0], res.Points[len(res.Points)-1]
		if first.IngestPerS > 0 {
			res.IngestRatio = round3(last.IngestPerS / first.IngestPerS)
		}
		if first.ProcessPerS > 0 {
			res.ProcessRatio = round3(last.ProcessPerS / first.ProcessPerS)
		}
	}
	res.Gaps = gapDetection(ctx, probe, cfg.gapWindow, log)
	return res, audits, nil
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
	_, err := pool.Exec(ctx, `
		INSERT INTO webhooks.events (provider, external_id, event_type, status, payload, source, received_at, updated_at, claimed_at, processed_at, attempts)
		SELECT 'seqbench', g::text, 'job.completed', 'processed', '{"seq": true}'::jsonb, 'webhook', now(), now(), now(), now(), 1
		FROM generate_series(1, $1::bigint) AS g WHERE g % $2 <> 0`, window, every)
	if err != nil {
		g.Note = "load: " + err.Error()
		return g
	}
	g.Expected = window / every
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) webhooks.events`); err != nil {
		log.Warn("vacuum", "error", err)
	}
	_ = pool.QueryRow(ctx, `SELECT reltuples::bigint FROM pg_class WHERE oid = 'webhooks.events'::regclass`).Scan(&g.TableRows)
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
