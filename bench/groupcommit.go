package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/localpg"
)

// groupCommitResult is HTTP ingest of unique signed deliveries with group
// commit (the default, PGINBOX_INGEST_BATCH=64) and with each delivery
// alone in its transaction (PGINBOX_INGEST_BATCH=1), against the plain
// single-row INSERT … ON CONFLICT DO NOTHING with as many connections as
// senders: the same number of senders, in interleaved slices.
type groupCommitResult struct {
	Senders int           `json:"senders"`
	Batched variantResult `json:"batched"`
	Alone   variantResult `json:"alone"`
	Raw     variantResult `json:"raw_insert"`
	// BatchedVsRaw and AloneVsRaw are deliveries/s over the plain insert's
	// rows/s.
	BatchedVsRaw float64 `json:"batched_vs_raw"`
	AloneVsRaw   float64 `json:"alone_vs_raw"`
	// MeanBatch is deliveries per ingest transaction in the batched runner
	// (its pginbox_ingest_batch_size histogram at the end).
	MeanBatch float64 `json:"mean_batch"`
}

// runGroupCommit measures group commit: each variant on a scratch database
// of its own, two runners (handler none) and a pool for the plain insert.
func runGroupCommit(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*groupCommitResult, []audit, error) {
	senders := cfg.httpConns
	res := &groupCommitResult{Senders: senders}
	client := newClient(senders)
	defer client.CloseIdleConnections()

	var vs []*sqlVariant
	var runners []*runnerProc
	defer func() {
		for _, r := range runners {
			_ = r.stop()
		}
	}()
	urls := map[string]string{}
	for _, name := range []string{"gc-batched", "gc-alone", "gc-raw"} {
		u, err := env.scratch(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		defer env.dropScratch(context.Background(), name)
		urls[name] = u
	}
	// The batched runner serves /metrics (its batch sizes) on an admin
	// listener of its own.
	adminPort, err := localpg.FreePort()
	if err != nil {
		return nil, nil, err
	}
	adminAddr := fmt.Sprintf("127.0.0.1:%d", adminPort)
	for _, rv := range []struct{ name, batch, admin string }{{"batched", "64", adminAddr}, {"alone", "1", "off"}} {
		r, err := startRunner(ctx, cfg.bin, "gc-"+rv.name, urls["gc-"+rv.name], cfg.logDir, map[string]string{
			"PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": string(benchSecret),
			"PGINBOX_HANDLER": "none", "PGINBOX_INGEST_BATCH": rv.batch, "PGINBOX_ADMIN_ADDR": rv.admin,
		})
		if err != nil {
			return nil, nil, err
		}
		runners = append(runners, r)
		base := r.base
		vs = append(vs, &sqlVariant{name: "HTTP, group commit", mode: "unique", provider: "sume", space: "gc" + rv.name, conns: senders, runner: r.pid(),
			eventOf: func(pos int64) int64 { return pos }, outcomes: map[string]int64{},
			call: func(ctx context.Context, _ *pgx.Conn, _, key, _ string) (string, error) {
				d := deliverSume(ctx, client, base, key, false)
				if d.err == nil && d.status != http.StatusOK {
					d.err = fmt.Errorf("status %d", d.status)
				}
				return d.outcome, d.err
			}})
	}
	vs[1].name = "HTTP, each delivery alone"
	raw, err := newPool(ctx, urls["gc-raw"], senders, "bench-raw", "synchronous_commit", "on")
	if err != nil {
		return nil, nil, err
	}
	defer raw.Close()
	if err := warm(ctx, raw, senders, callRaw); err != nil {
		return nil, nil, fmt.Errorf("warm up plain insert: %w", err)
	}
	vs = append(vs, &sqlVariant{name: "plain INSERT … ON CONFLICT DO NOTHING", mode: "unique", provider: "sume", space: "gcraw",
		pool: raw, conns: senders, call: callRaw, eventOf: func(pos int64) int64 { return pos }, outcomes: map[string]int64{}})

	probe, err := newPool(ctx, urls["gc-raw"], 2, "bench-probe")
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	var backend int
	_ = probe.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	for _, v := range vs {
		v.postmaster = postmasterPID(backend)
	}
	// Warm the runners' pools and plpgsql with one short slice each.
	for _, v := range vs[:2] {
		v.slice(ctx, cfg.slice/4, probe)
		*v = sqlVariant{name: v.name, mode: v.mode, provider: v.provider, space: v.space + "w", conns: v.conns,
			eventOf: v.eventOf, call: v.call, postmaster: v.postmaster, runner: v.runner, outcomes: map[string]int64{}}
	}
	measured := time.Now() // the warm-up's rows are not audited
	log.Info("group commit: interleaved slices", "senders", senders, "rounds", cfg.rounds*2, "slice", cfg.slice)
	interleave(ctx, vs, cfg.rounds*2, cfg.slice, probe)
	res.Batched, res.Alone, res.Raw = vs[0].result(), vs[1].result(), vs[2].result()
	if res.Raw.PerS > 0 {
		res.BatchedVsRaw = round3(res.Batched.PerS / res.Raw.PerS)
		res.AloneVsRaw = round3(res.Alone.PerS / res.Raw.PerS)
	}
	res.MeanBatch = meanBatch("http://" + adminAddr + "/metrics")

	var audits []audit
	for i, name := range []string{"gc-batched", "gc-alone", "gc-raw"} {
		pool, err := newPool(ctx, urls[name], 2, "bench-audit")
		if err != nil {
			return res, audits, err
		}
		in := vs[i].auditInput("HTTP group commit: "+vs[i].name, "")
		in.since = measured
		if i == 2 {
			in = vs[i].auditInput("plain insert, 64 connections (ceiling)", "bench.raw")
			in.createdAnswers = -1
		}
		a, err := runAudit(ctx, pool, in)
		pool.Close()
		if err != nil {
			return res, audits, err
		}
		audits = append(audits, a)
	}
	return res, audits, nil
}

// meanBatch reads a runner's pginbox_ingest_batch_size histogram from its
// /metrics: deliveries per ingest transaction, 0 when it cannot be read.
func meanBatch(metricsURL string) float64 {
	sum, ok1 := scrapeMetric(metricsURL, "pginbox_ingest_batch_size_sum")
	count, ok2 := scrapeMetric(metricsURL, "pginbox_ingest_batch_size_count")
	if !ok1 || !ok2 || count <= 0 {
		return 0
	}
	return round1(sum / count)
}
