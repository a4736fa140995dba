// Command bench is pginbox's bench suite (`make bench`, `make bench-quick`).
//
// It starts a PostgreSQL cluster of its own in a fresh temporary folder from
// the installed binaries (or uses DATABASE_URL, where it creates and drops
// scratch databases), migrates it with pginbox.Migrate, and runs:
//
//  1. SQL ingest: webhooks.ingest_webhook() against the plain
//     INSERT … ON CONFLICT DO NOTHING ceiling, 16 and 32 connections,
//     all-unique ids and a duplicate storm, in interleaved slices;
//  2. HTTP ingest: signed Sume deliveries into a `pginbox serve` process
//     over 64 keep-alive connections, each event delivered 5 times, plus
//     forged ones; then unique deliveries from 64 senders with group commit
//     and with each delivery alone, against the plain insert with 64
//     connections, in interleaved slices;
//  3. processing with the sql: handler, workers and batch size swept;
//  4. wake-up latency, delivery commit → handler start, at steady rates:
//     one runner, two runners (cross-process NOTIFY), poll only;
//  5. growth: ingest and processing on an empty install against one
//     keeping 10 M processed events over 90 days (-growth-rows), side by
//     side, and gap detection over a 1,000,000-id window; then retention:
//     prune() dropping 60 of those 90 days while ingest runs; and the
//     upgrade: a v0.2 database of 2 M events (-upgrade-rows) migrated to
//     storage v2 and moved;
//  6. NOTIFY cost: none, the runner's coalesced NOTIFY, one per row;
//  7. pooler: HTTP ingest and processing direct (named prepared
//     statements, and the pooler-safe cache_describe for what it costs)
//     and through PgBouncer in transaction mode;
//  8. ordering: the same events (200 keys × 25, 10,000 keys × 5, ingested
//     in random order) processed by a provider with strict order per key
//     and by one without, side by side, and ingest on a provider without
//     ordering against the schema before ordering existed.
//
// With -soak D it runs only the soak instead: a steady signed load for D
// into one runner with the sql: handler, sampled every minute (soak.go).
//
// Every scenario that delivers is audited from the database afterwards;
// any lost or twice-processed event makes the command exit 1. It prints a
// table, writes <out>/summary.json and SVG charts, and regenerates the
// report (bench/REPORT.md).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

type config struct {
	quick   bool
	durable bool
	bin     string
	logDir  string
	profile string

	slice       time.Duration
	rounds      int
	sqlConns    []int
	stormWindow int
	stormCopies int
	notifyConns int

	httpConns   int
	httpDur     time.Duration
	rejectShare float64
	httpLate    [3][2]int64
	httpLateN   int

	processN      int
	processPoints [][2]int
	perEvent      bool
	statsFixed    bool
	// variantN events (and River jobs) per side-by-side run, variantRounds
	// interleaved rounds, variantPerEvent whether the event-by-event
	// variant is among them.
	variantN        int
	variantRounds   int
	variantPerEvent bool
	callN           int

	latRates   []int
	latDur     time.Duration
	latConfigs []string

	// growthRows processed events are kept over seedDays days in the
	// growth scenario's second database, which retention then prunes.
	growthRows int64
	gapWindow  int64
	// retentionBaseline is how long the ingest runs before the prune.
	retentionBaseline time.Duration
	// upgradeRows processed events are in the v0.2 database upgraded.
	upgradeRows int64

	// backfillEvents is the size of the fake Stripe account of the
	// event-log drill, 1% of it never delivered as webhooks.
	backfillEvents int

	// orderingShapes are the ordering scenario's workloads (keys, events
	// per key), each run with every lease of orderingLeases, ordered and
	// unordered alternately for orderingRounds rounds.
	orderingShapes [][2]int
	orderingLeases []string
	orderingRounds int
	// traceN deliveries per tracing configuration, over traceConns
	// connections (scenario "traces").
	traceN, traceConns int
}

func fullConfig() config {
	return config{
		durable: true,
		slice:   2500 * time.Millisecond, rounds: 4, sqlConns: []int{16, 32}, stormWindow: 64, stormCopies: 10, notifyConns: 16,
		httpConns: 64, httpDur: 20 * time.Second, rejectShare: 0.05,
		httpLate: [3][2]int64{{5, 50}, {50, 500}, {500, 3000}}, httpLateN: 4000,
		processN:      15_000,
		processPoints: [][2]int{{8, 100}, {1, 100}, {2, 100}, {4, 100}, {16, 100}, {8, 10}, {8, 500}},
		perEvent:      true, statsFixed: true, callN: 5000,
		variantN: 50_000, variantRounds: 2, variantPerEvent: true,
		latRates: []int{200, 1000}, latDur: 15 * time.Second, latConfigs: latencyConfigs,
		growthRows: 10_000_000, gapWindow: 1_000_000, retentionBaseline: 3 * time.Second, upgradeRows: 2_000_000,
		backfillEvents: 100_000,
		orderingShapes: [][2]int{{200, 25}, {10_000, 5}}, orderingLeases: []string{variantRowLock, variantTwoPhase}, orderingRounds: 4,
		traceN: 20_000, traceConns: 32,
	}
}

func quickConfig() config {
	c := fullConfig()
	c.quick = true
	c.slice, c.rounds = 300*time.Millisecond, 2
	c.httpDur, c.httpLate, c.httpLateN = 2500*time.Millisecond, [3][2]int64{{5, 50}, {50, 300}, {300, 1000}}, 400
	c.processN, c.processPoints, c.statsFixed, c.callN = 2_000, [][2]int{{8, 100}}, false, 300
	c.variantN, c.variantRounds, c.variantPerEvent = 20_000, 1, false
	c.latDur = 1500 * time.Millisecond
	c.latRates, c.latConfigs = []int{200, 1000}, []string{"single", "cross"}
	c.growthRows, c.gapWindow, c.retentionBaseline, c.upgradeRows = 200_000, 10_000, time.Second, 50_000
	c.backfillEvents = 2_000
	// Ordered ingest is the slow part (a sequence settled per event): small.
	c.orderingShapes, c.orderingLeases, c.orderingRounds = [][2]int{{40, 25}, {400, 5}}, []string{variantRowLock}, 1
	c.traceN, c.traceConns = 1_500, 16
	return c
}

var allScenarios = []string{"sql", "notify", "http", "process", "latency", "growth", "retention", "upgrade", "backfill", "pooler", "traces", "ordering"}

func main() {
	os.Exit(run())
}

func run() int {
	quick := flag.Bool("quick", false, "reduced run (a few minutes): small sizes, short slices")
	out := flag.String("out", "bench/out", "folder for summary.json, charts, logs and profiles")
	report := flag.String("report", "", "markdown report to regenerate (default bench/REPORT.md; with -quick <out>/REPORT-quick.md)")
	bin := flag.String("pginbox", "bin/pginbox", "pginbox binary for the runner processes (built when missing)")
	only := flag.String("only", "", "comma list of scenarios to run: "+strings.Join(allScenarios, ","))
	durable := flag.Bool("durable", true, "keep fsync and synchronous_commit on in the bench's own cluster")
	soak := flag.Duration("soak", 0, "run only the soak, this long (make soak: 10m): steady signed load, per-minute samples")
	soakRate := flag.Int("soak-rate", 100, "deliveries per second during the soak")
	rerender := flag.String("rerender", "", "render the report again from this summary.json (after a change to report.md.tmpl) instead of running")
	growthRows := flag.Int64("growth-rows", 0, "processed events kept over 90 days in the growth and retention scenarios (default 10000000; with -quick 200000)")
	upgradeRows := flag.Int64("upgrade-rows", 0, "processed events in the v0.2 database of the upgrade scenario (default 2000000; with -quick 50000)")
	flag.Parse()
	if *rerender != "" {
		return rerenderReport(*rerender, *out, *report)
	}

	cfg := fullConfig()
	if *quick {
		cfg = quickConfig()
	}
	cfg.durable = *durable
	if *growthRows > 0 {
		cfg.growthRows = *growthRows
	}
	if *upgradeRows > 0 {
		cfg.upgradeRows = *upgradeRows
	}
	if *report == "" {
		*report = "bench/REPORT.md"
		if *quick {
			*report = filepath.Join(*out, "REPORT-quick.md")
		}
	}
	want := allScenarios
	if *only != "" {
		want = strings.Split(*only, ",")
		for _, s := range want {
			if !slices.Contains(allScenarios, s) {
				fmt.Fprintf(os.Stderr, "bench: unknown scenario %q (have %s)\n", s, strings.Join(allScenarios, ","))
				return 2
			}
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	budget := 90 * time.Minute
	if *soak > 0 {
		budget = *soak + 10*time.Minute
	} else if *quick {
		budget = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	cfg.logDir, _ = filepath.Abs(*out)
	cfg.profile = filepath.Join(cfg.logDir, "process-cpu.pprof")

	res := &results{Quick: cfg.quick, Durable: cfg.durable, Started: time.Now(), Machine: machine()}
	tmp, err := os.MkdirTemp("", "pginbox-bench-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if slices.Contains(want, "http") || slices.Contains(want, "latency") || slices.Contains(want, "pooler") || slices.Contains(want, "traces") || *soak > 0 {
		if cfg.bin, err = buildRunner(ctx, *bin, tmp); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}

	env, err := openEnv(ctx, cfg.durable, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer env.close()
	migrate, err := env.prepareTemplate(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: template:", err)
		return 1
	}
	if *soak > 0 {
		return runSoak(ctx, env, cfg, *soak, *soakRate, *out, log)
	}
	res.Postgres = postgresInfo(ctx, env)
	res.Postgres.MigrateSeconds = round3(migrate.Seconds())
	log.Info("bench ready", "postgres", res.Postgres.Version, "own_cluster", env.cluster != nil, "quick", cfg.quick)

	step := func(name string, f func() error) {
		if !slices.Contains(want, name) || ctx.Err() != nil {
			return
		}
		t0 := time.Now()
		if err := f(); err != nil {
			log.Error("scenario failed", "scenario", name, "error", err)
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", name, err))
		}
		res.Durations = append(res.Durations, phase{name, round1(time.Since(t0).Seconds())})
	}
	step("sql", func() (err error) {
		var a []audit
		res.SQL, a, err = runSQLIngest(ctx, env, cfg, log)
		res.Audits = append(res.Audits, a...)
		return err
	})
	step("notify", func() (err error) {
		var a []audit
		res.Notify, a, err = runNotify(ctx, env, cfg, log)
		res.Audits = append(res.Audits, a...)
		return err
	})
	step("http", func() (err error) {
		var a []audit
		res.HTTP, a, err = runHTTP(ctx, env, cfg, log)
		res.Audits = append(res.Audits, a...)
		if err != nil {
			return err
		}
		res.GroupCommit, a, err = runGroupCommit(ctx, env, cfg, log)
		res.Audits = append(res.Audits, a...)
		return err
	})
	step("process", func() (err error) {
		var a []audit
		res.Process, a, err = runProcess(ctx, env, cfg, log)
		res.Audits = append(res.Audits, a...)
		if err != nil {
			return err
		}
		res.Variants, a, err = runVariants(ctx, env, cfg, tmp, log)
		res.Audits = append(res.Audits, a...)
		return err
	})
	step("latency", func() (err error) {
		var a []audit
		res.Latency, a, err = runLatency(ctx, env, cfg, log)
		res.Audits = append(res.Audits, a...)
		return err
	})
	// growth and retention share the database with the seeded history:
	// growth measures on it, retention then drops its old days.
	hist := &historyDB{env: env, rows: cfg.growthRows}
	defer hist.drop()
	step("growth", func() (err error) {
		var a []audit
		res.Growth, a, err = runGrowth(ctx, env, cfg, hist, log)
		res.Audits = append(res.Audits, a...)
		return err
	})
	step("retention", func() (err error) {
		var a []audit
		res.Retention, a, err = runRetention(ctx, env, cfg, hist, log)
		res.Audits = append(res.Audits, a...)
		return err
	})
	hist.drop()
	step("upgrade", func() (err error) {
		res.Upgrade, err = runUpgrade(ctx, env, cfg, log)
		return err
	})
	step("backfill", func() (err error) {
		res.Backfill, err = runBackfillDrill(ctx, env, cfg, log)
		return err
	})
	step("pooler", func() (err error) {
		var a []audit
		res.Pooler, a, err = runPooler(ctx, env, cfg, log)
		res.Audits = append(res.Audits, a...)
		return err
	})
	step("traces", func() (err error) {
		res.Traces, err = runTraces(ctx, env, cfg, log)
		return err
	})
	// Last: the newest scenario, so a run short of time keeps the others.
	step("ordering", func() (err error) {
		var a []audit
		res.Ordering, a, err = runOrdering(ctx, env, cfg, log)
		res.Audits = append(res.Audits, a...)
		return err
	})
	if ctx.Err() != nil {
		res.Errors = append(res.Errors, "interrupted or out of time: "+ctx.Err().Error())
	}
	res.Finished = time.Now()
	res.Machine.LoadAfter = loadAvg()

	sum := res.summary()
	printTable(os.Stdout, res, sum)
	printPooler(os.Stdout, res.Pooler)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(sum)
	if err := os.WriteFile(filepath.Join(*out, "summary.json"), buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	charts := writeCharts(*out, res)
	if err := os.WriteFile(*report, []byte(renderReport(res, sum, *out, *report, charts)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Printf("\nwrote %s, %s and %d charts in %s\n", filepath.Join(*out, "summary.json"), *report, len(charts), *out)
	if len(res.Errors) > 0 {
		fmt.Println("\nbench: scenario errors:")
		for _, e := range res.Errors {
			fmt.Println("  -", e)
		}
		return 1
	}
	if sum.Lost != 0 || sum.ProcessedTwice != 0 || !sum.AuditOK {
		fmt.Println("\nbench: EXACTLY-ONCE AUDIT FAILED")
		return 1
	}
	return 0
}

// rerenderReport writes the report again from a summary.json, with the
// current template: the figures are those of the run that wrote it.
func rerenderReport(path, out, report string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	var sum summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", path+":", err)
		return 1
	}
	sc := sum.Scenarios
	res := &results{Quick: sum.Quick, Durable: sum.Durable, Started: sum.Started,
		Finished: sum.Started.Add(time.Duration(sum.Seconds * float64(time.Second))), Machine: sum.Machine, Postgres: sum.Postgres,
		SQL: sc.SQL, Notify: sc.Notify, HTTP: sc.HTTP, GroupCommit: sc.GroupCommit, Process: sc.Process, Variants: sc.Variants, Latency: sc.Latency, Growth: sc.Growth, Retention: sc.Retention, Upgrade: sc.Upgrade, Ordering: sc.Ordering,
		Pooler: sc.Pooler, Traces: sc.Traces, Audits: sum.Audits, Errors: sum.Errors, Durations: sum.Phases}
	if report == "" {
		report = "bench/REPORT.md"
		if res.Quick {
			report = filepath.Join(out, "REPORT-quick.md")
		}
	}
	var charts []string
	for _, c := range []string{"latency-histogram.svg", "throughput-vs-rows.svg", "sql-ingest.svg", "processing.svg", "notify-cost.svg"} {
		if _, err := os.Stat(filepath.Join(out, c)); err == nil {
			charts = append(charts, c)
		}
	}
	if err := os.WriteFile(report, []byte(renderReport(res, res.summary(), out, report, charts)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Printf("wrote %s from %s\n", report, path)
	return 0
}
