package main

import (
	"context"
	"fmt"
	"github.com/jackc/pgx/v5/pgxpool"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

type httpResult struct {
	Conns          int              `json:"conns"`
	Seconds        float64          `json:"seconds"`
	Requests       int64            `json:"requests"`
	Accepted       int64            `json:"accepted"`
	Rejected       int64            `json:"rejected"`
	Errors         int64            `json:"errors"`
	FirstError     string           `json:"first_error,omitempty"`
	Events         int64            `json:"events_started"`
	RejectedShare  float64          `json:"rejected_share"`
	AcceptedPerS   float64          `json:"accepted_per_s"`
	RequestsPerS   float64          `json:"requests_per_s"`
	AttemptsPerEv  int              `json:"attempts_per_event"`
	Outcomes       map[string]int64 `json:"outcomes"`
	ResponseMS     dist             `json:"response_ms"`
	RejectMS       dist             `json:"rejected_response_ms"`
	CPU            cpuUse           `json:"cpu"`
	RunnerRSSMiB   float64          `json:"runner_rss_mib"`
	RunnerPeakMiB  float64          `json:"runner_peak_rss_mib"`
	RatioToCeiling float64          `json:"ratio_to_ceiling,omitempty"`
	// The second phase: a runner with the sql: handler drains the backlog
	// while late redeliveries of the same events arrive, then more arrive
	// once everything is processed.
	Drain drainResult `json:"drain"`
}

type drainResult struct {
	Events       int64            `json:"events"`
	Seconds      float64          `json:"seconds"`
	PerS         float64          `json:"per_s"`
	Late         int64            `json:"late_redeliveries"`
	LateOutcomes map[string]int64 `json:"late_outcomes"`
	LateMS       dist             `json:"late_response_ms"`
	After        int64            `json:"after_processed_redeliveries"`
	AfterMS      dist             `json:"after_processed_response_ms"`
	Errors       int64            `json:"errors"`
}

// runHTTP is scenario 2.
func runHTTP(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*httpResult, []audit, error) {
	dbURL, err := env.scratch(ctx, "http")
	if err != nil {
		return nil, nil, err
	}
	defer env.dropScratch(context.Background(), "http")
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	var backend int
	_ = probe.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	postmaster := postmasterPID(backend)

	common := map[string]string{"PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": string(benchSecret)}
	rA, err := startRunner(ctx, cfg.bin, "http-ingest", dbURL, cfg.logDir, merge(common, map[string]string{"PGINBOX_HANDLER": "none"}))
	if err != nil {
		return nil, nil, err
	}
	defer rA.stop()

	conns := cfg.httpConns
	client := newClient(conns)
	defer client.CloseIdleConnections()
	res := &httpResult{Conns: conns, Outcomes: map[string]int64{}, AttemptsPerEv: 5, RejectedShare: cfg.rejectShare}

	var mu sync.Mutex
	acked := map[string]struct{}{}
	var forged []string
	var createdAnswers int64
	var deliveries, errs int64
	record := func(key string, d delivery, isForged bool) {
		mu.Lock()
		defer mu.Unlock()
		deliveries++
		switch {
		case isForged && d.status == 401:
		case d.err != nil || d.status != 200:
			errs++
			if res.FirstError == "" {
				res.FirstError = fmt.Sprint(d.err)
			}
		default:
			acked[key] = struct{}{}
			if d.outcome == "created" {
				createdAnswers++
			}
		}
	}

	// Warm-up: every keep-alive connection, the runner's ingest pool.
	{
		var wg sync.WaitGroup
		for i := 0; i < conns; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := eventKey("hwarm", int64(i))
				record(key, deliverSume(ctx, client, rA.base, key, false), false)
			}()
		}
		wg.Wait()
	}

	sched := newHTTPSchedule(cfg.rejectShare, cfg.httpLate)
	meter := startCPU(rA.pid(), postmaster)
	start := time.Now()
	stopAt := start.Add(cfg.httpDur)
	hardStop := stopAt.Add(cfg.httpDur + 10*time.Second)
	var wg sync.WaitGroup
	var lat, rlat [][]float64 = make([][]float64, conns), make([][]float64, conns)
	outcomes := make([]map[string]int64, conns)
	for g := 0; g < conns; g++ {
		outcomes[g] = map[string]int64{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(hardStop) {
				if time.Now().After(stopAt) {
					sched.StopNew()
				}
				a, ok := sched.Next()
				if !ok {
					return
				}
				var key string
				if a.forged {
					key = eventKey("hrej", a.event)
				} else {
					key = eventKey("h", a.event)
				}
				d := deliverSume(ctx, client, rA.base, key, a.forged)
				ms := float64(d.end.Sub(d.start)) / 1e6
				if a.forged {
					rlat[g] = append(rlat[g], ms)
					mu.Lock()
					forged = append(forged, key)
					mu.Unlock()
				} else {
					lat[g] = append(lat[g], ms)
					if d.err == nil {
						outcomes[g][d.outcome]++
					}
				}
				record(key, d, a.forged)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	res.CPU = meter.stop()
	if ps, ok := readProc(rA.pid()); ok {
		res.RunnerRSSMiB = round1(float64(ps.RSSKiB) / 1024)
		res.RunnerPeakMiB = round1(float64(ps.HWMKiB) / 1024)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var all, rall []float64
	for g := range lat {
		all = append(all, lat[g]...)
		rall = append(rall, rlat[g]...)
		for k, n := range outcomes[g] {
			res.Outcomes[k] += n
		}
	}
	res.Seconds = round3(elapsed.Seconds())
	res.Requests = int64(len(all) + len(rall))
	res.Rejected = int64(len(rall))
	res.ResponseMS, res.RejectMS = msDist(all), msDist(rall)
	for _, n := range res.Outcomes {
		res.Accepted += n
	}
	res.AcceptedPerS = round1(float64(res.Accepted) / elapsed.Seconds())
	res.RequestsPerS = round1(float64(res.Requests) / elapsed.Seconds())
	res.Events = sched.next
	log.Info("http ingest", "accepted_per_s", res.AcceptedPerS, "p99_ms", res.ResponseMS.P99, "runner_cores", res.CPU.Runner)
	if err := rA.stop(); err != nil {
		log.Warn("http runner stop", "error", err)
	}

	// Phase two: process everything exactly once while late redeliveries
	// arrive (some hit events being processed right then).
	var keys []string
	mu.Lock()
	for k := range acked {
		keys = append(keys, k)
	}
	mu.Unlock()
	rB, err := startRunner(ctx, cfg.bin, "http-process", dbURL, cfg.logDir, merge(common, map[string]string{"PGINBOX_HANDLER": "sql:bench.on_event"}))
	if err != nil {
		return nil, nil, err
	}
	defer rB.stop()
	redeliver := func(n int, seed uint64) ([]float64, map[string]int64, int64) {
		r := rand.New(rand.NewPCG(seed, 9))
		out := map[string]int64{}
		var ms []float64
		var omu sync.Mutex
		var wg sync.WaitGroup
		work := make(chan string)
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for key := range work {
					d := deliverSume(ctx, client, rB.base, key, false)
					record(key, d, false)
					omu.Lock()
					ms = append(ms, float64(d.end.Sub(d.start))/1e6)
					if d.err == nil {
						out[d.outcome]++
					}
					omu.Unlock()
				}
			}()
		}
		for i := 0; i < n && ctx.Err() == nil; i++ {
			work <- keys[r.IntN(len(keys))]
		}
		close(work)
		wg.Wait()
		return ms, out, int64(n)
	}
	lateMS, lateOut, late := redeliver(min(len(keys), cfg.httpLateN), 3)
	waitDrained(ctx, probe, 30*time.Second, log)
	res.Drain = drainResult{Late: late, LateOutcomes: lateOut, LateMS: msDist(lateMS)}
	var n int64
	var secs float64
	if err := probe.QueryRow(ctx, `SELECT count(*), coalesce(extract(epoch FROM max(at) - min(at)), 0) FROM bench.handled`).Scan(&n, &secs); err == nil {
		res.Drain.Events, res.Drain.Seconds = n, round3(secs)
		if secs > 0 {
			res.Drain.PerS = round1(float64(n-1) / secs)
		}
	}
	afterMS, afterOut, after := redeliver(min(len(keys), cfg.httpLateN/2), 4)
	res.Drain.After, res.Drain.AfterMS = after, msDist(afterMS)
	for k, v := range afterOut {
		if k != "duplicate" {
			res.Drain.Errors += v // a processed event must answer duplicate
		}
	}
	// Let any (wrong) re-run show up before the audit.
	time.Sleep(300 * time.Millisecond)
	waitDrained(ctx, probe, 30*time.Second, log)
	if err := rB.stop(); err != nil {
		log.Warn("http runner stop", "error", err)
	}

	mu.Lock()
	in := auditInput{scenario: "http", providers: []string{"sume"}, forged: forged, deliveries: deliveries,
		errors: errs + res.Drain.Errors, createdAnswers: createdAnswers, handler: true}
	for k := range acked {
		in.acked = append(in.acked, [2]string{"sume", k})
	}
	mu.Unlock()
	a, err := runAudit(ctx, probe, in)
	if err != nil {
		return nil, nil, err
	}
	return res, []audit{a}, nil
}

func merge(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// waitDrained waits until no event is pending or being processed. It gives
// up when the backlog has not shrunk for `stall` (or after ten minutes):
// events left over then show up in the audit as not run.
func waitDrained(ctx context.Context, pool *pgxpool.Pool, stall time.Duration, log *slog.Logger) {
	start := time.Now()
	last, lastChange, lastCount := int64(-1), time.Now(), time.Time{}
	for ctx.Err() == nil {
		// Cheap every 100 ms; the count (for progress) every 2 s.
		var busy bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks.events WHERE status = 'pending')
			OR EXISTS (SELECT 1 FROM webhooks.events WHERE status = 'processing')`).Scan(&busy)
		if err != nil {
			log.Warn("wait for processing", "error", err)
			return
		}
		if !busy {
			return
		}
		if time.Since(lastCount) > 2*time.Second {
			lastCount = time.Now()
			var n int64
			if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhooks.events WHERE status = 'pending')
				+ (SELECT count(*) FROM webhooks.events WHERE status = 'processing')`).Scan(&n); err != nil {
				log.Warn("wait for processing", "error", err)
				return
			}
			if n != last {
				last, lastChange = n, time.Now()
			}
		}
		if time.Since(lastChange) > stall || time.Since(start) > 10*time.Minute {
			log.Warn("events still pending; the audit will count them as not run", "events", last, "waited", time.Since(start).Round(time.Second))
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
