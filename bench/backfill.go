package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/pginbox/pginbox/internal/backfill"
	"github.com/pginbox/pginbox/internal/provider/stripe"
	"github.com/pginbox/pginbox/internal/provider/stripe/stripefake"
)

// backfillResult is the event-log drill: a fake Stripe account whose events
// mostly arrived as webhooks, 1% never delivered.
type backfillResult struct {
	Events    int `json:"events"`
	Missing   int `json:"missing"`
	Recovered int `json:"recovered"`
	// AllStored: every event of the account is a row, exactly once.
	AllStored bool `json:"all_stored"`
	// RecoverySeconds is the first pass, from nothing read to every event
	// stored (the default rate: 25 requests/s).
	RecoverySeconds float64 `json:"recovery_seconds"`
	Pages           int     `json:"pages"`
	Requests        int     `json:"requests"`
	RequestsPerS    float64 `json:"requests_per_s"`
	// Steady*: the next pass, with nothing missing: it reads only the overlap.
	SteadySeconds  float64 `json:"steady_seconds"`
	SteadyRequests int     `json:"steady_requests"`
	SteadyListed   int     `json:"steady_listed"`
}

// runBackfillDrill is the event-log backfill drill.
func runBackfillDrill(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*backfillResult, error) {
	dbURL, err := env.scratch(ctx, "backfill")
	if err != nil {
		return nil, err
	}
	defer env.dropScratch(context.Background(), "backfill")
	pool, err := newPool(ctx, dbURL, 8, "bench-backfill")
	if err != nil {
		return nil, err
	}
	defer pool.Close()

	n := cfg.backfillEvents
	f := stripefake.New("rk_bench_events_read")
	defer f.Close()
	// The account's events over the last two days, several per second.
	end := time.Now().Add(-5 * time.Minute)
	span := 48 * time.Hour
	evs := make([]stripefake.Event, n)
	for i := range evs {
		evs[i] = stripefake.Event{ID: fmt.Sprintf("evt_bench_%07d", i), Type: "invoice.paid",
			Created: end.Add(-span + time.Duration(int64(span)/int64(n)*int64(i)).Truncate(time.Second))}
	}
	f.Add(evs...)
	// 99% arrived as webhooks (set-based, one statement); every 100th did not.
	if _, err := pool.Exec(ctx, `SELECT count(*) FROM generate_series(0, $1 - 1) AS g,
		LATERAL webhooks.ingest_webhook('stripe', 'evt_bench_' || lpad(g::text, 7, '0'), 'invoice.paid',
			jsonb_build_object('id', 'evt_bench_' || lpad(g::text, 7, '0'), 'object', 'event', 'type', 'invoice.paid'))
		WHERE g % 100 <> 0`, n); err != nil {
		return nil, fmt.Errorf("seed webhooks: %w", err)
	}
	el, err := stripe.NewEventLog("stripe", f.URL, "rk_bench_events_read")
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	opts := backfill.Options{Logger: quiet, PassTimeout: 30 * time.Minute}
	res := &backfillResult{Events: n, Missing: (n + 99) / 100}
	t0 := time.Now()
	rep, err := backfill.RunLog(ctx, pool, el, opts)
	res.RecoverySeconds = round3(time.Since(t0).Seconds())
	if err != nil {
		return res, err
	}
	res.Recovered, res.Pages, res.Requests = rep.Recovered, rep.Pages, rep.Requests
	if res.RecoverySeconds > 0 {
		res.RequestsPerS = round3(float64(rep.Requests) / res.RecoverySeconds)
	}
	var rows, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT external_id) FROM webhooks.events WHERE provider = 'stripe'`).Scan(&rows, &distinct); err != nil {
		return res, err
	}
	res.AllStored = rows == n && distinct == n && rep.Recovered == res.Missing

	t1 := time.Now()
	steady, err := backfill.RunLog(ctx, pool, el, opts)
	res.SteadySeconds = round3(time.Since(t1).Seconds())
	res.SteadyRequests, res.SteadyListed = steady.Requests, steady.Listed
	log.Info("backfill drill", "events", n, "recovered", res.Recovered, "seconds", res.RecoverySeconds, "pages", res.Pages,
		"requests_per_s", res.RequestsPerS, "all_stored", res.AllStored, "steady_requests", res.SteadyRequests)
	return res, err
}
