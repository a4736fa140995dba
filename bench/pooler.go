package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/pgbouncer"
)

// poolerRun is one way of reaching the database: HTTP ingest into a
// `pginbox serve` and processing with the sql: handler through it.
type poolerRun struct {
	Mode        string  `json:"mode"`
	URLNote     string  `json:"url"`
	IngestPerS  float64 `json:"ingest_http_per_s"`
	ResponseMS  dist    `json:"response_ms"`
	ProcessPerS float64 `json:"process_per_s"`
	Errors      int64   `json:"errors"`
	// IngestRounds and ProcessRounds are every round's figure (the ones
	// above are their medians).
	IngestRounds  []float64 `json:"ingest_http_rounds"`
	ProcessRounds []float64 `json:"process_rounds"`
}

// poolerResult compares a direct connection (named prepared statements, and
// the pooler-safe cache_describe for what it costs) with PgBouncer in
// transaction mode.
type poolerResult struct {
	Conns    int         `json:"conns"`
	Seconds  float64     `json:"ingest_seconds"`
	Events   int64       `json:"process_events"`
	PoolSize int         `json:"pgbouncer_default_pool_size"`
	Rounds   int         `json:"rounds"`
	Runs     []poolerRun `json:"runs"`
	// PooledIngestRatio and PooledProcessRatio: PgBouncer over direct.
	PooledIngestRatio  float64 `json:"pooled_ingest_ratio"`
	PooledProcessRatio float64 `json:"pooled_process_ratio"`
	// DescribeIngestRatio and DescribeProcessRatio: the pooler-safe exec
	// mode (cache_describe) over named prepared statements (cache_statement,
	// what pginbox uses on a connection it found direct), both direct: what
	// the pooler-safe mode would cost as the default everywhere.
	DescribeIngestRatio  float64 `json:"describe_vs_statement_ingest_ratio"`
	DescribeProcessRatio float64 `json:"describe_vs_statement_process_ratio"`
	// PgBouncerSkipped says why the PgBouncer mode did not run (no
	// binary, no connection through it); empty when it ran. The pooled
	// ratios are then 0.
	PgBouncerSkipped string `json:"pgbouncer_skipped,omitempty"`
}

// runPooler is the pooler scenario: the three modes interleaved, rounds
// times (3, or 1 with -quick), each figure the median of its rounds — the
// machine is shared, and a single run swings by a fifth. When PgBouncer
// cannot run here (see [startPooler]), the direct modes still run and the
// result says why; that is no error.
func runPooler(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*poolerResult, []audit, error) {
	rounds := 3
	if cfg.quick {
		rounds = 1
	}
	res := &poolerResult{Conns: 32, Seconds: cfg.httpDur.Seconds() / 3, Events: int64(cfg.processN * 2 / 3), PoolSize: 16, Rounds: rounds}
	modes := []string{"direct", "direct-cache-describe", "pgbouncer"}
	var audits []audit
	all := map[string][]poolerRun{}
	for round := 0; round < rounds; round++ {
		for _, mode := range modes {
			if mode == "pgbouncer" && res.PgBouncerSkipped != "" {
				continue
			}
			run, a, err := poolerMode(ctx, env, cfg, res, mode, log)
			audits = append(audits, a...)
			var skipped *poolerSkipped
			if errors.As(err, &skipped) && len(all["pgbouncer"]) == 0 { // once it ran, a failure is an error
				res.PgBouncerSkipped = skipped.why
				log.Warn("pooler: PgBouncer mode skipped, the direct modes run", "why", skipped.why)
				continue
			}
			if err != nil {
				return res, audits, fmt.Errorf("%s: %w", mode, err)
			}
			all[mode] = append(all[mode], run)
			log.Info("pooler", "round", round+1, "mode", mode, "ingest_per_s", run.IngestPerS, "process_per_s", run.ProcessPerS)
		}
	}
	byMode := map[string]poolerRun{}
	for _, mode := range modes {
		runs := all[mode]
		if len(runs) == 0 {
			continue
		}
		m := runs[0]
		var in, pr []float64
		for _, r := range runs {
			in, pr = append(in, r.IngestPerS), append(pr, r.ProcessPerS)
			m.IngestRounds, m.ProcessRounds = append(m.IngestRounds, r.IngestPerS), append(m.ProcessRounds, r.ProcessPerS)
		}
		m.IngestPerS, m.ProcessPerS = median(in), median(pr)
		res.Runs = append(res.Runs, m)
		byMode[mode] = m
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return round3(a / b)
	}
	d, c, p := byMode["direct"], byMode["direct-cache-describe"], byMode["pgbouncer"]
	res.PooledIngestRatio, res.PooledProcessRatio = ratio(p.IngestPerS, d.IngestPerS), ratio(p.ProcessPerS, d.ProcessPerS)
	res.DescribeIngestRatio, res.DescribeProcessRatio = ratio(c.IngestPerS, d.IngestPerS), ratio(c.ProcessPerS, d.ProcessPerS)
	return res, audits, nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return round1((s[len(s)/2-1] + s[len(s)/2]) / 2)
}

func poolerMode(ctx context.Context, env *pgEnv, cfg config, res *poolerResult, mode string, log *slog.Logger) (poolerRun, []audit, error) {
	run := poolerRun{Mode: mode}
	name := "pooler_" + strings.ReplaceAll(mode, "-", "_")
	dbURL, err := env.scratch(ctx, name)
	if err != nil {
		return run, nil, err
	}
	defer env.dropScratch(context.Background(), name)
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return run, nil, err
	}
	defer probe.Close()
	target := dbURL
	switch mode {
	case "direct":
		run.URLNote = "direct: pginbox probes it and uses named prepared statements (cache_statement)"
	case "direct-cache-describe":
		target += "&default_query_exec_mode=cache_describe"
		run.URLNote = "direct, default_query_exec_mode=cache_describe (the pooler-safe mode pginbox uses through a transaction pooler)"
	case "pgbouncer":
		b, via, err := startPooler(ctx, dbURL, res.PoolSize)
		if err != nil {
			return run, nil, err
		}
		defer b.Remove()
		target = via
		run.URLNote = fmt.Sprintf("PgBouncer 1.18, pool_mode=transaction, default_pool_size=%d, nothing added to the URL", res.PoolSize)
	}

	// HTTP ingest: fresh signed deliveries over keep-alive connections.
	r, err := startRunner(ctx, cfg.bin, name, target, cfg.logDir, map[string]string{
		"PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": string(benchSecret), "PGINBOX_HANDLER": "none"})
	if err != nil {
		return run, nil, err
	}
	client := newClient(res.Conns)
	var mu sync.Mutex
	var acked []string
	var times []float64
	var next, errs, deliveries atomic.Int64
	var created atomic.Int64
	deadline := time.Now().Add(time.Duration(res.Seconds * float64(time.Second)))
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < res.Conns; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				key := eventKey("pool"+mode[:1], next.Add(1))
				d := deliverSume(ctx, client, r.base, key, false)
				deliveries.Add(1)
				if d.err != nil {
					errs.Add(1)
					continue
				}
				if d.outcome == "created" {
					created.Add(1)
				}
				mu.Lock()
				acked = append(acked, key)
				times = append(times, float64(d.end.Sub(d.start))/1e6)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	client.CloseIdleConnections()
	if err := r.stop(); err != nil {
		return run, nil, err
	}
	run.IngestPerS = round1(float64(len(acked)) / took.Seconds())
	run.ResponseMS = msDist(times)
	run.Errors = errs.Load()
	in := auditInput{scenario: name + " ingest", providers: []string{"sume"}, deliveries: deliveries.Load(), errors: errs.Load(),
		createdAnswers: created.Load()}
	for _, k := range acked {
		in.acked = append(in.acked, [2]string{"sume", k})
	}
	a1, err := runAudit(ctx, probe, in)
	if err != nil {
		return run, nil, err
	}

	// Processing: preloaded events drained by an in-process runner with the
	// sql: handler through the same URL.
	if err := preload(ctx, probe, "pool", 0, res.Events); err != nil {
		return run, []audit{a1}, err
	}
	if _, err := probe.Exec(ctx, `DELETE FROM webhooks.events WHERE provider = 'sume'`); err != nil {
		return run, []audit{a1}, err
	}
	if _, _, err := runWorkers(ctx, target, probe, 8, 100, 5*time.Minute, log); err != nil {
		return run, []audit{a1}, err
	}
	_, _, rate := handledRate(ctx, probe, "pool")
	run.ProcessPerS = round1(rate)
	a2, err := runAudit(ctx, probe, auditInput{scenario: name + " process", providers: []string{"pool"}, handler: true, preloaded: true})
	return run, []audit{a1, a2}, err
}

// printPooler adds the pooler scenario to the human table.
func printPooler(w io.Writer, p *poolerResult) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "\npooler (%d HTTP connections for %.1fs, then %d events with the sql: handler, 8 workers x 100; median of %d interleaved rounds)\n", p.Conns, p.Seconds, p.Events, p.Rounds)
	for _, r := range p.Runs {
		fmt.Fprintf(w, "  %-24s ingest %8.1f/s %v   process %8.1f/s %v\n", r.Mode, r.IngestPerS, r.IngestRounds, r.ProcessPerS, r.ProcessRounds)
	}
	if p.PgBouncerSkipped != "" {
		fmt.Fprintf(w, "  %-24s skipped: %s\n", "pgbouncer", p.PgBouncerSkipped)
		fmt.Fprintf(w, "  cache_describe / cache_statement, both direct: ingest %.3f, process %.3f\n", p.DescribeIngestRatio, p.DescribeProcessRatio)
		return
	}
	fmt.Fprintf(w, "  PgBouncer / direct: ingest %.3f, process %.3f; cache_describe / cache_statement, both direct: ingest %.3f, process %.3f\n",
		p.PooledIngestRatio, p.PooledProcessRatio, p.DescribeIngestRatio, p.DescribeProcessRatio)
}

// poolerSkipped says why the bench's PgBouncer cannot run here: no binary,
// or no connection through it answers. The pooler scenario then runs
// without its PgBouncer mode, says why, and the bench does not fail.
type poolerSkipped struct{ why string }

func (e *poolerSkipped) Error() string { return "PgBouncer skipped: " + e.why }

// startPooler starts the bench's own PgBouncer (transaction mode, on
// 127.0.0.1) in front of the server dbURL names, and returns it and the URL
// of the same database through it, once a connection through it answered.
//
// PgBouncer logs into the server as dbURL's user with the password pgx
// finds for it: in the URL, else PGPASSWORD, else the passfile (.pgpass).
// With none (a server that trusts the bench, or peer on a socket),
// PgBouncer is given a password of its own, random for this run: the
// server never asks for it, and PgBouncer asks every client for it
// (scram-sha-256), so the pooler on loopback lets in nobody but the bench.
// The URL through the pooler carries the password (a .pgpass line names
// the server's port, not the pooler's) and sslmode=disable (PgBouncer
// listens without TLS on loopback; it reaches the server as dbURL says).
func startPooler(ctx context.Context, dbURL string, poolSize int) (*pgbouncer.Process, string, error) {
	pc, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return nil, "", err
	}
	password := pc.Password
	if password == "" {
		password = rand.Text()
	}
	b, err := pgbouncer.Start(ctx, pc.Host, strconv.Itoa(int(pc.Port)), pgbouncer.Options{PoolSize: poolSize, Users: []string{pc.User},
		Passwords: map[string]string{pc.User: password}})
	if errors.Is(err, pgbouncer.ErrNoBinary) {
		return nil, "", &poolerSkipped{why: err.Error()}
	}
	if err != nil {
		return nil, "", err
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		_ = b.Remove()
		return nil, "", err
	}
	u.Host = fmt.Sprintf("127.0.0.1:%d", b.Port)
	u.User = url.UserPassword(pc.User, password)
	q := u.Query()
	for _, k := range []string{"host", "hostaddr", "port", "user", "password", "passfile", "sslrootcert", "sslcert", "sslkey"} {
		q.Del(k)
	}
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	via := u.String()

	probeCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(probeCtx, via)
	if err == nil {
		err = conn.QueryRow(probeCtx, "SELECT 1").Scan(new(int))
		_ = conn.Close(context.Background())
	}
	if err != nil {
		log := strings.TrimSpace(b.Log())
		if i := strings.LastIndex(log, "\n"); i >= 0 {
			log = log[i+1:]
		}
		_ = b.Remove()
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", &poolerSkipped{why: fmt.Sprintf("no connection through PgBouncer to %s as %q: %v (PgBouncer: %s)", net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))), pc.User, err, log)}
	}
	return b, via, nil
}
