package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// growthPoint is one database of the growth scenario: the empty install, or
// the one keeping the seeded history.
type growthPoint struct {
	// Rows is how many processed events the database kept (0: empty), over
	// Days days; LoadSeconds how long seeding them took.
	Rows        int64   `json:"rows"`
	Days        int     `json:"days,omitempty"`
	LoadSeconds float64 `json:"load_seconds"`
	// IngestPerS is ingest_webhook()'s rate over all its slices, as in
	// scenario 1 (calls over time); IngestSlices each slice's.
	IngestPerS   float64   `json:"ingest_per_s"`
	IngestMS     dist      `json:"ingest_call_ms"`
	IngestSlices []float64 `json:"ingest_slice_rates"`
	IngestErrors int64     `json:"ingest_errors"`
	// WAL bytes and PostgreSQL CPU (µs, all its processes) per ingest.
	IngestWAL  float64 `json:"ingest_wal_bytes_per_delivery"`
	IngestPGus float64 `json:"ingest_postgres_cpu_us"`
	// ProcessPerS is events over the seconds between the first and the last
	// handler start, summed over the rounds; ProcessRounds each round's.
	ProcessPerS   float64   `json:"process_per_s"`
	ProcessRounds []float64 `json:"process_round_rates"`
	Processed     int64     `json:"processed"`
	// CPU per processed event, µs: PostgreSQL and the runner; WAL bytes per
	// processed event, the move into history included.
	ProcessPGus     float64 `json:"process_postgres_cpu_us"`
	ProcessRunnerUS float64 `json:"process_runner_cpu_us"`
	ProcessWAL      float64 `json:"process_wal_bytes_per_event"`
	// Sizes at the end, MiB: the keys (table and indexes), the history (all
	// slices), the queue; IndexMiB the named indexes of keys and queue.
	KeysMiB    float64            `json:"keys_mib"`
	HistoryMiB float64            `json:"history_mib"`
	InboxMiB   float64            `json:"inbox_mib"`
	IndexMiB   map[string]float64 `json:"index_mib"`
	Statements []stmtStat         `json:"statements,omitempty"`
	ClaimPlan  string             `json:"claim_plan,omitempty"`
	IngestPlan string             `json:"ingest_plan,omitempty"`
	Audit      bool               `json:"audit_ok"`
}

// growthResult is scenario 5: the empty install against one keeping Rows
// processed events, measured side by side in one run.
type growthResult struct {
	Rows          int64   `json:"rows"`
	Days          int     `json:"days"`
	SliceSeconds  float64 `json:"slice_seconds"`
	Rounds        int     `json:"rounds"`
	ProcessEvents int     `json:"process_events_per_round"`
	// Points are the empty install, then the one with the history.
	Points []growthPoint `json:"points"`
	// IngestRatio and ProcessRatio: the one with the history over the empty
	// one.
	IngestRatio  float64   `json:"ingest_ratio"`
	ProcessRatio float64   `json:"process_ratio"`
	Gaps         gapResult `json:"gap_detection"`
}

// growthSide is one database of the scenario while it runs.
type growthSide struct {
	point  growthPoint
	url    string
	probe  *pgxpool.Pool
	ingest *pgxpool.Pool
	v      *sqlVariant
	since  time.Time
	// processing totals over the rounds
	n                   int64
	secs, wal, pg, runr float64
	providers           []string
}

func (s *growthSide) close() {
	if s.ingest != nil {
		s.ingest.Close()
	}
	if s.probe != nil {
		s.probe.Close()
	}
}

// runGrowth is scenario 5: SQL ingest and processing on an empty install
// against one keeping cfg.growthRows processed events over seedDays days
// (hist, seeded on first use), side by side: the ingest in interleaved
// slices of the two, then rounds of processing cfg.processN preloaded
// events in each, alternately. Then gap detection on the big one.
func runGrowth(ctx context.Context, env *pgEnv, cfg config, hist *historyDB, log *slog.Logger) (*growthResult, []audit, error) {
	res := &growthResult{Rows: cfg.growthRows, Days: seedDays, SliceSeconds: cfg.slice.Seconds(), Rounds: cfg.rounds, ProcessEvents: cfg.processN}
	keptURL, load, err := hist.get(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	emptyURL, err := env.scratch(ctx, "growth-empty")
	if err != nil {
		return nil, nil, err
	}
	defer env.dropScratch(context.Background(), "growth-empty")
	sides := []*growthSide{
		{point: growthPoint{IndexMiB: map[string]float64{}}, url: emptyURL},
		{point: growthPoint{Rows: cfg.growthRows, Days: seedDays, LoadSeconds: round1(load.Seconds()), IndexMiB: map[string]float64{}}, url: keptURL},
	}
	for _, s := range sides {
		defer s.close()
		if s.probe, err = newPool(ctx, s.url, 2, "bench-probe"); err != nil {
			return nil, nil, err
		}
		if s.ingest, err = newPool(ctx, s.url, 16, "bench-ingest", "synchronous_commit", "on"); err != nil {
			return nil, nil, err
		}
		if err := warm(ctx, s.ingest, 16, callIngest(ingestSQL)); err != nil {
			return nil, nil, err
		}
	}
	probe := sides[0].probe
	var backend int
	_ = probe.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	postmaster := postmasterPID(backend)
	var audits []audit

	// Warm-up, not recorded: the first ingest and the first runner on a
	// database pay for cold caches.
	if !cfg.quick {
		for _, s := range sides {
			v := &sqlVariant{name: "warm", mode: "unique", provider: "g-warm", space: "g-warm", pool: s.ingest, conns: 16,
				call: callIngest(ingestSQL), eventOf: func(p int64) int64 { return p }, outcomes: map[string]int64{}}
			v.slice(ctx, 500*time.Millisecond, probe)
			if _, _, err := runWorkers(ctx, s.url, s.probe, 8, 100, 30*time.Second, log); err != nil {
				return res, audits, err
			}
		}
	}
	for _, s := range sides {
		if _, err := s.probe.Exec(ctx, `CHECKPOINT`); err != nil {
			log.Warn("checkpoint", "error", err)
		}
		if err := s.probe.QueryRow(ctx, `SELECT now()`).Scan(&s.since); err != nil {
			return res, audits, err
		}
	}
	pgssReset(ctx, env, probe)

	// Ingest: new keys of provider sume, of the shape of the seeded ones
	// ("evt_" + random hex), so they land all over its part of the keys'
	// primary key as one busy provider's ids do.
	log.Info("growth: ingest", "rows", cfg.growthRows)
	var vs []*sqlVariant
	for _, s := range sides {
		s.v = &sqlVariant{name: fmt.Sprintf("ingest_webhook, %s rows kept", human(s.point.Rows)), mode: "unique", provider: "sume", space: "evt",
			pool: s.ingest, conns: 16, call: callIngest(ingestSQL), eventOf: func(p int64) int64 { return p }, outcomes: map[string]int64{}, postmaster: postmaster}
		vs = append(vs, s.v)
	}
	interleave(ctx, vs, cfg.rounds, cfg.slice, probe)
	if err := ctx.Err(); err != nil {
		return res, audits, err
	}
	for _, s := range sides {
		r := s.v.result()
		p := &s.point
		p.IngestPerS, p.IngestMS, p.IngestSlices, p.IngestErrors = r.PerS, r.CallMS, r.SliceRates, r.Errors
		p.IngestWAL, p.IngestPGus = r.WALBytesPer, r.PGCPUus
		_, _ = s.probe.Exec(ctx, `ANALYZE webhooks.inbox`)
		p.ClaimPlan = explain(ctx, s.probe, claimPickSQL)
		p.IngestPlan = explain(ctx, s.probe, keysInsertSQL)
		// The ingest's backlog, not measured: processed so that every
		// round below starts from an empty queue.
		if _, _, err := runWorkers(ctx, s.url, s.probe, 8, 100, 30*time.Second, log); err != nil {
			return res, audits, err
		}
		in := s.v.auditInput(fmt.Sprintf("growth ingest, %s rows kept", human(p.Rows)), recentEvents(s.since))
		in.handler, in.since = true, s.since
		a, err := runAudit(ctx, s.probe, in)
		if err != nil {
			return res, audits, err
		}
		p.Audit = a.OK
		audits = append(audits, a)
	}

	// Processing: the same number of preloaded events in each, rounds
	// alternating which goes first.
	for round := 0; round < cfg.rounds && ctx.Err() == nil; round++ {
		order := []*growthSide{sides[0], sides[1]}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		provider := fmt.Sprintf("g-process-%d", round)
		for _, s := range order {
			if err := s.processRound(ctx, cfg, provider, log); err != nil {
				return res, audits, err
			}
		}
	}
	for _, s := range sides {
		p := &s.point
		if s.secs > 0 && s.n > 1 {
			p.ProcessPerS = round1(float64(s.n) / s.secs)
		}
		p.Processed = s.n
		if s.n > 0 {
			p.ProcessWAL = round1(s.wal / float64(s.n))
			p.ProcessPGus = round1(s.pg * 1e6 / float64(s.n))
			p.ProcessRunnerUS = round1(s.runr * 1e6 / float64(s.n))
		}
		a, err := runAudit(ctx, s.probe, auditInput{scenario: fmt.Sprintf("growth processing, %s rows kept", human(p.Rows)),
			providers: s.providers, handler: true, preloaded: true, createdAnswers: -1, since: s.since})
		if err != nil {
			return res, audits, err
		}
		p.Audit = p.Audit && a.OK
		audits = append(audits, a)
		p.Statements = pgssMatch(ctx, env, s.probe, `ingest_webhook|webhooks\.claim|webhooks\.complete|process_pending|move_history|on_event`)
		s.sizes(ctx)
		res.Points = append(res.Points, *p)
		log.Info("growth", "rows", p.Rows, "ingest_per_s", p.IngestPerS, "process_per_s", p.ProcessPerS)
	}
	if e, k := res.Points[0], res.Points[1]; e.IngestPerS > 0 && e.ProcessPerS > 0 {
		res.IngestRatio = round3(k.IngestPerS / e.IngestPerS)
		res.ProcessRatio = round3(k.ProcessPerS / e.ProcessPerS)
	}
	res.Gaps = gapDetection(ctx, sides[1].probe, cfg.gapWindow, log)
	return res, audits, nil
}

// processRound preloads cfg.processN pending events of provider and drains
// them with an in-process runner (8 workers, batch 100, the sql: handler,
// its history schedule on), then moves what is left into history, adding
// the rate, CPU and WAL to the side's totals.
func (s *growthSide) processRound(ctx context.Context, cfg config, provider string, log *slog.Logger) error {
	if err := preloadQueue(ctx, s.probe, provider, int64(cfg.processN)); err != nil {
		return err
	}
	s.providers = append(s.providers, provider)
	w0 := readWalPos(ctx, s.probe)
	took, use, err := runWorkers(ctx, s.url, s.probe, 8, 100, 30*time.Second, log)
	if err != nil {
		return err
	}
	if err := moveAll(ctx, s.probe); err != nil {
		return err
	}
	w1 := readWalPos(ctx, s.probe)
	n, secs, rate := handledRateSince(ctx, s.probe, provider, s.since)
	s.point.ProcessRounds = append(s.point.ProcessRounds, round1(rate))
	s.n += n
	s.secs += secs
	s.wal += float64(w1.lsn - w0.lsn)
	s.pg += use.Postgres * took.Seconds()
	s.runr += use.Bench * took.Seconds()
	return nil
}

// sizes reads the sizes of the keys, the history and the queue.
func (s *growthSide) sizes(ctx context.Context) {
	p := &s.point
	var keys, hist, inbox int64
	_ = s.probe.QueryRow(ctx, `SELECT pg_total_relation_size('webhooks.keys'),
		(SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0) FROM pg_inherits WHERE inhparent = 'webhooks.history'::regclass)::bigint,
		pg_total_relation_size('webhooks.inbox')`).Scan(&keys, &hist, &inbox)
	p.KeysMiB, p.HistoryMiB, p.InboxMiB = round1(float64(keys)/(1<<20)), round1(float64(hist)/(1<<20)), round1(float64(inbox)/(1<<20))
	rows, err := s.probe.Query(ctx, `SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid IN ('webhooks.keys'::regclass, 'webhooks.inbox'::regclass)`)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var sz int64
		if rows.Scan(&name, &sz) == nil {
			p.IndexMiB[name] = round1(float64(sz) / (1 << 20))
		}
	}
}

// preloadQueue inserts n pending events of provider straight into the
// queue, with their keys (random "evt_" ids), as ingest_webhook() would
// store them.
func preloadQueue(ctx context.Context, pool *pgxpool.Pool, provider string, n int64) error {
	_, err := pool.Exec(ctx, `
		WITH e AS (
			INSERT INTO webhooks.inbox (provider, external_id, event_type, payload, source)
			SELECT $1, k.key, 'job.completed',
			       jsonb_build_object('event', 'job.completed', 'job_id', k.key, 'status', 'COMPLETED',
			                          'data', jsonb_build_object('note', $3::text)),
			       'webhook'
			FROM generate_series(1, $2::bigint) AS g,
			     LATERAL (SELECT 'evt_' || substr(md5($1 || '-' || g::text), 1, 24) AS key) AS k
			RETURNING id, provider, external_id, received_at)
		INSERT INTO webhooks.keys (provider, external_id, event_id, received_at)
		SELECT provider, external_id, id, received_at FROM e`, provider, n, padding)
	if err != nil {
		return fmt.Errorf("preload queue: %w", err)
	}
	_, err = pool.Exec(ctx, `ANALYZE webhooks.inbox`)
	return err
}

// moveAll calls webhooks.move_history() until it has nothing more to move.
func moveAll(ctx context.Context, pool *pgxpool.Pool) error {
	for i := 0; i < 10_000 && ctx.Err() == nil; i++ {
		var more bool
		if err := pool.QueryRow(ctx, `SELECT (webhooks.move_history(10000) ->> 'more')::boolean`).Scan(&more); err != nil {
			return fmt.Errorf("move_history: %w", err)
		}
		if !more {
			return nil
		}
	}
	return ctx.Err()
}

// recentEvents is webhooks.events narrowed to events received at or after
// since, as a table expression for the audit: with the time a constant, the
// planner opens only the day slices of history that can hold them.
func recentEvents(since time.Time) string {
	return fmt.Sprintf(`(SELECT * FROM webhooks.events WHERE received_at >= '%s'::timestamptz)`, since.UTC().Format(time.RFC3339Nano))
}
