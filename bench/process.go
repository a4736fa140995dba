package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/process"
	"github.com/pginbox/pginbox/runner"
)

type processPoint struct {
	Workers int     `json:"workers"`
	Batch   int     `json:"batch"`
	Events  int64   `json:"events"`
	Seconds float64 `json:"seconds"`
	// PerS is events per second between the first and the last handler
	// start (from the side table); WallPerS from runner start to the last
	// event processed.
	PerS     float64 `json:"per_s"`
	WallPerS float64 `json:"wall_per_s"`
	CPU      cpuUse  `json:"cpu"`
	// CPU time per event, in µs: PostgreSQL (all its processes) and the
	// runner (the bench process, which hosts it).
	PGCPUus     float64 `json:"postgres_cpu_us_per_event"`
	RunnerCPUus float64 `json:"runner_cpu_us_per_event"`
	// WALPer is WAL bytes written per event (claim, handler, complete).
	WALPer float64 `json:"wal_bytes_per_event"`
	Audit  bool    `json:"audit_ok"`
}

func (p *processPoint) perEvent(wall time.Duration) {
	if p.Events > 0 {
		p.PGCPUus = round1(p.CPU.Postgres * wall.Seconds() * 1e6 / float64(p.Events))
		p.RunnerCPUus = round1(p.CPU.Bench * wall.Seconds() * 1e6 / float64(p.Events))
	}
}

type processResult struct {
	Preloaded int            `json:"events_per_point"`
	Points    []processPoint `json:"points"`
	Default   processPoint   `json:"default"`
	Best      processPoint   `json:"best"`
	// PerEvent is the default point run event by event from Go
	// (process.PerEvent: a savepoint, the handler, complete() and
	// a release per event, one commit per batch), against the default
	// process_batch() statement per batch.
	PerEvent   processPoint `json:"default_event_by_event"`
	Statements []stmtStat   `json:"statements,omitempty"`
	Profile    string       `json:"profile_top,omitempty"`
	// CompletePlan is webhooks.complete()'s own plan (auto_explain) with
	// 800 events in flight and statistics taken when none was.
	CompletePlan string `json:"complete_plan,omitempty"`
	// StatsInFlight is the default point after ANALYZE ran while n events
	// were being processed (the planner then picks the primary key for
	// complete()).
	StatsInFlight processPoint `json:"default_with_in_flight_statistics"`
	// UsualStats is the A side of that A/B (same rounds, usual statistics).
	UsualStats processPoint `json:"default_ab_usual_statistics"`
	// CallCosts is the server CPU of single calls on one connection.
	CallCosts []callCost `json:"call_costs,omitempty"`
}

// callCost is the server CPU one statement costs, read from the backend's
// /proc/<pid>/stat over many calls (less sensitive to other load on the
// machine than wall time).
type callCost struct {
	Statement string  `json:"statement"`
	What      string  `json:"what"`
	CPUus     float64 `json:"server_cpu_us"`
	WallUS    float64 `json:"wall_us"`
}

// measureCalls runs each statement n times on one connection and reads the
// backend's CPU time; nil when the server is not on this machine.
func measureCalls(ctx context.Context, dbURL string, n int, stmts [][2]string) []callCost {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil
	}
	defer conn.Close(context.Background())
	var backend int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil || postmasterPID(backend) == 0 {
		return nil
	}
	var out []callCost
	for _, st := range stmts {
		for i := 0; i < 100; i++ { // prepare, plan caches, warm buffers
			if _, err := conn.Exec(ctx, st[0]); err != nil {
				return out
			}
		}
		before, _ := readProc(backend)
		t0 := time.Now()
		for i := 0; i < n && ctx.Err() == nil; i++ {
			if _, err := conn.Exec(ctx, st[0]); err != nil {
				return out
			}
		}
		wall := time.Since(t0)
		after, _ := readProc(backend)
		out = append(out, callCost{Statement: st[0], What: st[1], CPUus: round1(float64(after.CPU-before.CPU) / 1e3 / float64(n)),
			WallUS: round1(float64(wall) / 1e3 / float64(n))})
	}
	return out
}

// analyzeInFlight claims n events (committed), analyzes the table while
// they are in processing, then hands them back with release().
func analyzeInFlight(ctx context.Context, pool *pgxpool.Pool, n int) error {
	if _, err := pool.Exec(ctx, `SELECT count(*) FROM webhooks.claim('bench-stats', $1, '5 minutes')`, n); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `ANALYZE webhooks.events`); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, `SELECT count(*) FILTER (WHERE webhooks.release(id, 'bench-stats', attempts)) FROM webhooks.events WHERE status = 'processing' AND locked_by = 'bench-stats'`)
	return err
}

// preload inserts n pending events for provider straight into the table.
func preload(ctx context.Context, pool *pgxpool.Pool, provider string, from, n int64) error {
	_, err := pool.Exec(ctx, `
		INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT $1, 'evt_' || md5($1 || g::text), 'job.completed',
		       jsonb_build_object('event', 'job.completed', 'job_id', 'evt_' || md5($1 || g::text), 'status', 'COMPLETED',
		                          'data', jsonb_build_object('note', $4::text))
		FROM generate_series($2::bigint, $2::bigint + $3::bigint - 1) AS g`, provider, from, n, padding)
	if err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	_, err = pool.Exec(ctx, `ANALYZE webhooks.events`)
	return err
}

// quietLog drops the in-process runner's logs below warnings.
func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// runWorkers runs an in-process runner (runner.New with the sql: handler,
// the same code `pginbox serve` runs) until nothing is pending, and
// measures it.
func runWorkers(ctx context.Context, dbURL string, probe *pgxpool.Pool, workers, batch int, limit time.Duration, log *slog.Logger) (time.Duration, cpuUse, error) {
	return runWorkersOpt(ctx, dbURL, probe, workers, batch, variantRowLock, limit, log)
}

// The ways the bench runs a sql: handler, side by side.
const (
	// variantRowLock is the default: the row lock as the lease, one
	// webhooks.process_pending() statement per batch.
	variantRowLock = "row-lock"
	// variantTwoPhase is PGINBOX_LEASE_MODE=two-phase: webhooks.claim() in a
	// transaction of its own, then one webhooks.process_batch() statement.
	variantTwoPhase = "two-phase"
	// variantPerEvent is the two-phase lease run event by event from Go (a
	// savepoint, the handler, complete() and a release per event).
	variantPerEvent = "event-by-event"
)

// runWorkersOpt is runWorkers with the handler run as variant.
func runWorkersOpt(ctx context.Context, dbURL string, probe *pgxpool.Pool, workers, batch int, variant string, limit time.Duration, log *slog.Logger) (time.Duration, cpuUse, error) {
	h, err := runner.ParseHandler("sql:bench.on_event", time.Minute)
	if err != nil {
		return 0, cpuUse{}, err
	}
	lease := "row-lock"
	switch variant {
	case variantPerEvent:
		h, lease = process.PerEvent(h), "two-phase"
	case variantTwoPhase:
		lease = "two-phase"
	}
	cfg := runner.Config{Addr: "127.0.0.1:0", AdminAddr: "off", Handler: h, LeaseMode: lease, Workers: workers, BatchSize: batch,
		ReconcileEvery: -1, ChecksEvery: -1, SkipMigrate: true, ShutdownTimeout: 10 * time.Second}
	var backend int
	_ = probe.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	srv, err := runner.New(ctx, cfg, dbURL, quietLog())
	if err != nil {
		return 0, cpuUse{}, fmt.Errorf("runner.New: %w", err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	meter := startCPU(0, postmasterPID(backend))
	start := time.Now()
	go func() { done <- srv.Run(rctx) }()
	waitDrained(ctx, probe, limit, log)
	took := time.Since(start)
	use := meter.stop()
	stop()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("in-process runner did not stop within 30s")
	}
	return took, use, err
}

func handledRate(ctx context.Context, pool *pgxpool.Pool, provider string) (int64, float64, float64) {
	return handledRateSince(ctx, pool, provider, time.Time{})
}

// handledRateSince: handler runs for events of provider received since.
func handledRateSince(ctx context.Context, pool *pgxpool.Pool, provider string, since time.Time) (int64, float64, float64) {
	var n int64
	var secs float64
	_ = pool.QueryRow(ctx, `
		SELECT count(*), coalesce(extract(epoch FROM max(h.at) - min(h.at)), 0)
		FROM bench.handled AS h JOIN webhooks.events AS e ON e.id = h.event_id
		WHERE e.provider = $1 AND e.received_at >= $2`, provider, since).Scan(&n, &secs)
	if secs <= 0 || n < 2 {
		return n, secs, 0
	}
	return n, secs, float64(n-1) / secs
}

// runProcess is scenario 3.
func runProcess(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*processResult, []audit, error) {
	dbURL, err := env.scratch(ctx, "process")
	if err != nil {
		return nil, nil, err
	}
	defer env.dropScratch(context.Background(), "process")
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	res := &processResult{Preloaded: cfg.processN}
	var audits []audit
	res.CallCosts = measureCalls(ctx, dbURL, cfg.callN, [][2]string{
		{`SELECT 1`, "a round trip, for scale"},
		{`SELECT webhooks.complete(-1, 'bench', 1)`, "complete() that matches no row (plpgsql, plan cached per session)"},
		{`SELECT "bench"."on_event"(e) FROM webhooks.events AS e WHERE e.id = -1`, "the event-by-event handler statement, no row"},
		{`SELECT count(*) FROM webhooks.process_batch('bench.on_event(webhooks.events)', 'bench', '{-1}', '{1}')`, "process_batch() over a batch whose one event is not leased (its fixed cost)"},
	})
	limit := 30 * time.Second // without progress
	for i, pt := range cfg.processPoints {
		w, b := pt[0], pt[1]
		provider := fmt.Sprintf("p3-w%d-b%d", w, b)
		t0 := time.Now()
		if err := preload(ctx, probe, provider, 1, int64(cfg.processN)); err != nil {
			return res, audits, err
		}
		isDefault := w == 8 && b == 100
		if isDefault {
			res.CompletePlan = completePlan(ctx, dbURL, 800)
			pgssReset(ctx, env, probe)
		}
		var prof *os.File
		if isDefault && cfg.profile != "" {
			if prof, err = os.Create(cfg.profile); err == nil {
				if err := pprof.StartCPUProfile(prof); err != nil {
					prof.Close()
					prof = nil
				}
			}
		}
		w0 := readWalPos(ctx, probe)
		took, use, err := runWorkers(ctx, dbURL, probe, w, b, limit, log)
		w1 := readWalPos(ctx, probe)
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
			res.Profile = pprofTop(cfg.profile)
		}
		if err != nil {
			return res, audits, err
		}
		if isDefault {
			res.Statements = pgssTop(ctx, env, probe, 10)
		}
		p, a, err := measuredPoint(ctx, probe, fmt.Sprintf("process %d workers batch %d", w, b), provider, w, b, took, use, w0, w1)
		if err != nil {
			return res, audits, err
		}
		audits = append(audits, a)
		res.Points = append(res.Points, p)
		if isDefault || (i == 0 && res.Default.Workers == 0) {
			res.Default = p
		}
		if p.PerS > res.Best.PerS {
			res.Best = p
		}
		log.Info("process", "workers", w, "batch", b, "per_s", p.PerS, "audit", a.OK, "runner_s", round1(took.Seconds()), "point_s", round1(time.Since(t0).Seconds()))
		// Keep the table as small for every point.
		if _, err := probe.Exec(ctx, `TRUNCATE webhooks.inbox, webhooks.history, webhooks.keys, bench.handled CASCADE`); err != nil {
			return res, audits, err
		}
	}
	// A/B: the default point with the usual statistics (taken with no
	// event in flight) against statistics taken with 800 events in flight
	// (complete() then uses the primary key — what fixing its plan gives),
	// alternated A B A B on half the events each so that other load on the
	// machine hits both alike.
	if cfg.statsFixed {
		var acc [2]struct {
			n          int64
			secs, wall float64
			pg, runner float64 // CPU seconds
		}
		for round := 0; round < 4 && ctx.Err() == nil; round++ {
			b := round % 2
			provider := fmt.Sprintf("p3-ab%d-%d", b, round)
			if err := preload(ctx, probe, provider, 1, int64(cfg.processN/2)); err != nil {
				return res, audits, err
			}
			if b == 1 {
				if err := analyzeInFlight(ctx, probe, 800); err != nil {
					return res, audits, err
				}
			}
			took, use, err := runWorkers(ctx, dbURL, probe, 8, 100, limit, log)
			if err != nil {
				return res, audits, err
			}
			n, secs, _ := handledRate(ctx, probe, provider)
			name := "process 8 workers batch 100, A/B usual statistics"
			if b == 1 {
				name = "process 8 workers batch 100, A/B statistics with events in flight"
			}
			a, err := runAudit(ctx, probe, auditInput{scenario: fmt.Sprintf("%s (round %d)", name, round/2+1),
				providers: []string{provider}, handler: true, preloaded: true, createdAnswers: -1})
			if err != nil {
				return res, audits, err
			}
			audits = append(audits, a)
			acc[b].n += n
			acc[b].secs += secs
			acc[b].wall += took.Seconds()
			acc[b].pg += use.Postgres * took.Seconds()
			acc[b].runner += use.Bench * took.Seconds()
			if _, err := probe.Exec(ctx, `TRUNCATE webhooks.inbox, webhooks.history, webhooks.keys, bench.handled CASCADE`); err != nil {
				return res, audits, err
			}
		}
		for b := range acc {
			x := acc[b]
			if x.n == 0 || x.secs == 0 {
				continue
			}
			p := processPoint{Workers: 8, Batch: 100, Events: x.n, Seconds: round3(x.secs), PerS: round1(float64(x.n) / x.secs),
				WallPerS: round1(float64(x.n) / x.wall), Audit: true,
				CPU:     cpuUse{Postgres: round3(x.pg / x.wall), Bench: round3(x.runner / x.wall), Machine: runtime.NumCPU()},
				PGCPUus: round1(x.pg * 1e6 / float64(x.n)), RunnerCPUus: round1(x.runner * 1e6 / float64(x.n))}
			if b == 0 {
				res.UsualStats = p
			} else {
				res.StatsInFlight = p
			}
		}
		log.Info("process A/B statistics", "usual_per_s", res.UsualStats.PerS, "in_flight_per_s", res.StatsInFlight.PerS)
	}
	// The same default point event by event from Go, as the runner did
	// before process_batch(): the gain of one statement per batch.
	if cfg.perEvent {
		provider := "p3-per-event"
		if err := preload(ctx, probe, provider, 1, int64(cfg.processN)); err != nil {
			return res, audits, err
		}
		w0 := readWalPos(ctx, probe)
		took, use, err := runWorkersOpt(ctx, dbURL, probe, 8, 100, variantPerEvent, limit, log)
		w1 := readWalPos(ctx, probe)
		if err != nil {
			return res, audits, err
		}
		p, a, err := measuredPoint(ctx, probe, "process 8 workers batch 100, event by event from Go", provider, 8, 100, took, use, w0, w1)
		if err != nil {
			return res, audits, err
		}
		audits = append(audits, a)
		res.PerEvent = p
		log.Info("process event by event", "per_s", p.PerS)
		if _, err := probe.Exec(ctx, `TRUNCATE webhooks.inbox, webhooks.history, webhooks.keys, bench.handled CASCADE`); err != nil {
			return res, audits, err
		}
	}
	return res, audits, nil
}

// measuredPoint turns one runner's drain of provider's preloaded events
// into a processPoint — rate from the handler's own timestamps, CPU and WAL
// (between w0 and w1) per event — and audits it as scenario.
func measuredPoint(ctx context.Context, probe *pgxpool.Pool, scenario, provider string, workers, batch int,
	took time.Duration, use cpuUse, w0, w1 walPos) (processPoint, audit, error) {
	n, secs, rate := handledRate(ctx, probe, provider)
	p := processPoint{Workers: workers, Batch: batch, Events: n, Seconds: round3(secs), PerS: round1(rate),
		WallPerS: round1(float64(n) / took.Seconds()), CPU: use}
	p.perEvent(took)
	if n > 0 {
		p.WALPer = round1(float64(w1.lsn-w0.lsn) / float64(n))
	}
	a, err := runAudit(ctx, probe, auditInput{scenario: scenario,
		providers: []string{provider}, handler: true, preloaded: true, createdAnswers: -1})
	p.Audit = a.OK
	return p, a, err
}

// pprofTop summarises a CPU profile with `go tool pprof -top`.
func pprofTop(path string) string {
	cmd := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", path)
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	lines := strings.Split(string(out), "\n")
	var keep []string
	for _, l := range lines {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// completePlan shows the plan webhooks.complete() really runs while n
// events are being processed (claimed and not yet completed, as with 8
// workers × batch 100 in flight), with statistics taken when none was:
// auto_explain logs the function's nested statement as a notice. It needs
// a superuser (LOAD); it returns "" when that is not possible. Everything is
// rolled back.
func completePlan(ctx context.Context, dbURL string, n int) string {
	cc, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return ""
	}
	var mu sync.Mutex
	var notes []string
	cc.OnNotice = func(_ *pgconn.PgConn, note *pgconn.Notice) {
		mu.Lock()
		notes = append(notes, note.Message)
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return ""
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		return ""
	}
	defer tx.Rollback(context.Background())
	var id int64
	var attempt int32
	if err := tx.QueryRow(ctx, `SELECT max(id), max(attempts) FROM webhooks.claim('bench-explain', $1, '5 minutes')`, n).Scan(&id, &attempt); err != nil {
		return ""
	}
	for _, q := range []string{`LOAD 'auto_explain'`, `SET LOCAL auto_explain.log_min_duration = 0`, `SET LOCAL auto_explain.log_analyze = on`,
		`SET LOCAL auto_explain.log_buffers = on`, `SET LOCAL auto_explain.log_nested_statements = on`,
		`SET LOCAL auto_explain.log_level = notice`, `SET LOCAL client_min_messages = notice`} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return ""
		}
	}
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT webhooks.complete($1, 'bench-explain', $2)`, id, attempt).Scan(&ok); err != nil {
		return ""
	}
	_, _ = tx.Exec(ctx, `SET LOCAL auto_explain.log_min_duration = -1`)
	mu.Lock()
	defer mu.Unlock()
	if len(notes) == 0 {
		return ""
	}
	return strings.TrimSpace(notes[0])
}
