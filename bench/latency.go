package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// latencyRun is one steady rate into one configuration.
type latencyRun struct {
	Config   string  `json:"config"`
	Rate     int     `json:"rate"`
	Sent     int64   `json:"sent"`
	SentPerS float64 `json:"sent_per_s"`
	Errors   int64   `json:"errors"`
	// FromResponse: handler start minus the moment the client had the 200
	// (the commit happened just before it): the headline.
	FromResponse dist `json:"from_response_ms"`
	// FromReceived: handler start minus received_at, the ingest
	// transaction's start (before its commit): an upper bound.
	FromReceived dist `json:"from_received_ms"`
	// ResponseMS is the delivery's own response time.
	ResponseMS dist `json:"response_ms"`
	// The two legs: 200 received → the claim that took the event (the
	// claim transaction's start, claimed_at), and that claim → handler
	// start (the claim's own commit, then the events before it in its
	// batch).
	ToClaim      dist `json:"response_to_claim_ms"`
	ClaimToStart dist `json:"claim_to_handler_ms"`
	// WAL flushes during the run (pg_stat_wal): how many, and their mean
	// duration — every commit of a delivery and of a claim waits for one.
	WALSyncs    int64     `json:"wal_syncs"`
	WALSyncMean float64   `json:"wal_sync_mean_ms"`
	samples     []float64 // FromResponse values, for the histogram
}

type latencyResult struct {
	Seconds float64      `json:"seconds_per_run"`
	Runs    []latencyRun `json:"runs"`
}

func (r *latencyResult) find(config string, rate int) *latencyRun {
	for i := range r.Runs {
		if r.Runs[i].Config == config && r.Runs[i].Rate == rate {
			return &r.Runs[i]
		}
	}
	return nil
}

// latencyConfigs: where deliveries go and which runner works.
//   - single: one runner receives and processes (its workers are woken in
//     process the moment a delivery commits).
//   - cross: runner A receives (no workers), runner B processes: B learns of
//     work through A's coalesced NOTIFY and its LISTEN connection.
//   - poll: the same with LISTEN disabled on B (PGINBOX_LISTEN=false): B
//     finds work by polling every PGINBOX_POLL_INTERVAL (1 s).
var latencyConfigs = []string{"single", "cross", "poll"}

// runLatency is scenario 4.
func runLatency(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*latencyResult, []audit, error) {
	res := &latencyResult{Seconds: cfg.latDur.Seconds()}
	var audits []audit
	for _, conf := range cfg.latConfigs {
		rates := cfg.latRates
		// The quick run crosses runners at 200/s only.
		if cfg.quick && conf == "cross" {
			rates = cfg.latRates[:1]
		}
		runs, a, err := latencyConfig(ctx, env, cfg, conf, rates, log)
		if err != nil {
			return res, audits, fmt.Errorf("latency %s: %w", conf, err)
		}
		res.Runs = append(res.Runs, runs...)
		audits = append(audits, a)
	}
	return res, audits, nil
}

func latencyConfig(ctx context.Context, env *pgEnv, cfg config, conf string, rates []int, log *slog.Logger) ([]latencyRun, audit, error) {
	name := "latency_" + conf
	dbURL, err := env.scratch(ctx, name)
	if err != nil {
		return nil, audit{}, err
	}
	defer env.dropScratch(context.Background(), name)
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return nil, audit{}, err
	}
	defer probe.Close()
	common := map[string]string{"PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": string(benchSecret)}
	var target *runnerProc
	switch conf {
	case "single":
		r, err := startRunner(ctx, cfg.bin, "latency-single", dbURL, cfg.logDir, merge(common, map[string]string{"PGINBOX_HANDLER": "sql:bench.on_event"}))
		if err != nil {
			return nil, audit{}, err
		}
		defer r.stop()
		target = r
	default:
		a, err := startRunner(ctx, cfg.bin, "latency-"+conf+"-A", dbURL, cfg.logDir, merge(common, map[string]string{"PGINBOX_HANDLER": "none"}))
		if err != nil {
			return nil, audit{}, err
		}
		defer a.stop()
		listen := "true"
		if conf == "poll" {
			listen = "false"
		}
		b, err := startRunner(ctx, cfg.bin, "latency-"+conf+"-B", dbURL, cfg.logDir, map[string]string{
			"PGINBOX_HANDLER": "sql:bench.on_event", "PGINBOX_LISTEN": listen})
		if err != nil {
			return nil, audit{}, err
		}
		defer b.stop()
		target = a
	}
	client := newClient(64)
	defer client.CloseIdleConnections()

	var mu sync.Mutex
	acked := map[string]struct{}{}
	var deliveries, errs, createdAnswers int64
	var runs []latencyRun
	// Warm-up, not measured.
	for i := 0; i < 16; i++ {
		key := eventKey("lwarm", int64(i))
		d := deliverSume(ctx, client, target.base, key, false)
		deliveries++
		if d.err != nil {
			errs++
			continue
		}
		acked[key] = struct{}{}
		if d.outcome == "created" {
			createdAnswers++
		}
	}
	waitDrained(ctx, probe, 30*time.Second, log)
	for _, rate := range rates {
		space := fmt.Sprintf("l%s%d", conf[:1], rate)
		n := int64(float64(rate) * cfg.latDur.Seconds())
		respAt := make([]int64, n) // unix µs of the 200
		respMS := make([]float64, n)
		ok := make([]bool, n)
		var runErrs int64
		jobs := make(chan int64, 1024)
		var wg sync.WaitGroup
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range jobs {
					key := eventKey(space, i)
					d := deliverSume(ctx, client, target.base, key, false)
					mu.Lock()
					deliveries++
					if d.err != nil {
						errs++
						runErrs++
					} else {
						acked[key] = struct{}{}
						if d.outcome == "created" {
							createdAnswers++
						}
					}
					mu.Unlock()
					if d.err == nil {
						respAt[i] = d.end.UnixMicro()
						respMS[i] = float64(d.end.Sub(d.start)) / 1e6
						ok[i] = true
					}
				}
			}()
		}
		ws0 := readWalSync(ctx, probe)
		// Open loop: delivery i leaves at start + i/rate, whatever the
		// answers do.
		start := time.Now()
		interval := time.Second / time.Duration(rate)
		for i := int64(0); i < n && ctx.Err() == nil; i++ {
			if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
				time.Sleep(d)
			}
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		sentFor := time.Since(start)
		waitDrained(ctx, probe, 30*time.Second, log)
		if err := ctx.Err(); err != nil {
			return nil, audit{}, err
		}
		if !cfg.quick {
			time.Sleep(1100 * time.Millisecond) // backends report WAL statistics at most once a second
		}
		ws1 := readWalSync(ctx, probe)
		run := latencyRun{Config: conf, Rate: rate, Sent: n, SentPerS: round1(float64(n) / sentFor.Seconds()), Errors: runErrs}
		if d := ws1.Syncs - ws0.Syncs; d > 0 {
			run.WALSyncs, run.WALSyncMean = d, round3((ws1.SyncMS-ws0.SyncMS)/float64(d))
		}
		rows, err := probe.Query(ctx, `
			SELECT e.external_id, (extract(epoch FROM min(h.at)) * 1e6)::bigint, (extract(epoch FROM e.received_at) * 1e6)::bigint,
			       coalesce((extract(epoch FROM min(h.claimed_at)) * 1e6)::bigint, 0)
			FROM bench.handled AS h JOIN webhooks.events AS e ON e.id = h.event_id
			WHERE e.provider = 'sume' AND e.external_id LIKE $1
			GROUP BY e.external_id, e.received_at`, space+"\\_%")
		if err != nil {
			return nil, audit{}, err
		}
		idx := map[string]int64{}
		for i := int64(0); i < n; i++ {
			idx[eventKey(space, i)] = i
		}
		var fromResp, fromRecv, resp, toClaim, claimToStart []float64
		for rows.Next() {
			var key string
			var at, recv, claimed int64
			if err := rows.Scan(&key, &at, &recv, &claimed); err != nil {
				rows.Close()
				return nil, audit{}, err
			}
			i, found := idx[strings.TrimSpace(key)]
			if !found || !ok[i] {
				continue
			}
			fromResp = append(fromResp, float64(at-respAt[i])/1000)
			fromRecv = append(fromRecv, float64(at-recv)/1000)
			resp = append(resp, respMS[i])
			if claimed > 0 {
				toClaim = append(toClaim, float64(claimed-respAt[i])/1000)
				claimToStart = append(claimToStart, float64(at-claimed)/1000)
			}
		}
		rows.Close()
		run.FromResponse, run.FromReceived, run.ResponseMS = msDist(fromResp), msDist(fromRecv), msDist(resp)
		run.ToClaim, run.ClaimToStart = msDist(toClaim), msDist(claimToStart)
		run.samples = fromResp
		runs = append(runs, run)
		log.Info("latency", "config", conf, "rate", rate, "p50_ms", run.FromResponse.P50, "p99_ms", run.FromResponse.P99)
	}
	mu.Lock()
	in := auditInput{scenario: "latency " + conf, providers: []string{"sume"}, deliveries: deliveries, errors: errs,
		createdAnswers: createdAnswers, handler: true}
	for k := range acked {
		in.acked = append(in.acked, [2]string{"sume", k})
	}
	mu.Unlock()
	a, err := runAudit(ctx, probe, in)
	return runs, a, err
}
