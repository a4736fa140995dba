package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The retention the scenario enforces, as an operator would: payloads (whole
// days of history) for 30 days, keys for 400.
const (
	retentionKeepPayload = "30 days"
	retentionKeepKeys    = "400 days"
	// retentionConns callers of ingest_webhook() run during the prune.
	retentionConns = 8
	// retentionSampleKeys old keys are delivered again after the prune:
	// every one must answer duplicate.
	retentionSampleKeys = 200
)

// retentionResult is scenario "retention": webhooks.prune() on the seeded
// history while ingest runs.
type retentionResult struct {
	Rows        int64  `json:"rows"`
	Days        int    `json:"days"`
	KeepPayload string `json:"keep_payload"`
	KeepKeys    string `json:"keep_keys"`
	// Calls is how many prune() calls it took (repeated while "more");
	// CallSeconds each one's time, Seconds all of them.
	Calls       int       `json:"prune_calls"`
	CallSeconds []float64 `json:"prune_call_seconds"`
	Seconds     float64   `json:"prune_seconds"`
	// What prune() reported, summed over the calls.
	DaysDropped    int64    `json:"days_dropped"`
	PayloadsPruned int64    `json:"payloads_pruned"`
	KeysDeleted    int64    `json:"keys_deleted"`
	Busy           []string `json:"busy,omitempty"`
	// WALBytes is all WAL written from the first call's start to the last
	// one's end (pg_current_wal_insert_lsn(), the concurrent ingest's
	// included); PruneWALBytes prune()'s own (pg_stat_statements, its
	// nested statements included), -1 when that is not available.
	WALBytes      int64 `json:"wal_bytes"`
	PruneWALBytes int64 `json:"prune_wal_bytes"`
	// Live days and events kept before and after (the slices' reltuples,
	// an estimate); OldKeys the keys older than keep_payload before and
	// after (keep_keys keeps them all).
	DaysBefore    int64 `json:"live_days_before"`
	DaysAfter     int64 `json:"live_days_after"`
	EventsBefore  int64 `json:"history_events_before"`
	EventsAfter   int64 `json:"history_events_after"`
	OldKeysBefore int64 `json:"old_keys_before"`
	OldKeysAfter  int64 `json:"old_keys_after"`
	// SampleKeys keys of dropped days delivered again after the prune;
	// SampleDuplicates how many answered duplicate (all must).
	SampleKeys       int `json:"sample_keys"`
	SampleDuplicates int `json:"sample_duplicates"`
	// The concurrent ingest: Conns callers; Before its calls in the
	// seconds before the prune, During those in flight while it ran.
	Conns        int     `json:"ingest_conns"`
	BeforeMS     dist    `json:"ingest_before_ms"`
	BeforePerS   float64 `json:"ingest_before_per_s"`
	DuringMS     dist    `json:"ingest_during_ms"`
	DuringPerS   float64 `json:"ingest_during_per_s"`
	DuringCalls  int64   `json:"ingest_during_calls"`
	DuringErrors int64   `json:"ingest_during_errors"`
	IngestErrors int64   `json:"ingest_errors"`
	FirstError   string  `json:"ingest_first_error,omitempty"`
	Audit        bool    `json:"audit_ok"`
	Last         string  `json:"last_result,omitempty"`
	// Statements are pg_stat_statements' prune() and ingest_webhook()
	// while the scenario ran.
	Statements    []stmtStat `json:"statements,omitempty"`
	PruneWALKnown bool       `json:"prune_wal_measured"`
}

// pruneReport is what webhooks.prune() returns.
type pruneReport struct {
	Payloads int64  `json:"payloads_pruned"`
	Events   int64  `json:"events_deleted"`
	Days     int64  `json:"days_dropped"`
	Busy     string `json:"busy"`
	More     bool   `json:"more"`
}

// runRetention is scenario "retention": on the seeded history (hist; after
// the growth scenario when both run), retentionConns connections call
// ingest_webhook() in a loop while webhooks.prune(keep_payload => '30
// days', keep_keys => '400 days') is called until it has no more to do: 60
// of the 90 days go. Then keys of the dropped days are delivered again.
func runRetention(ctx context.Context, env *pgEnv, cfg config, hist *historyDB, log *slog.Logger) (*retentionResult, []audit, error) {
	res := &retentionResult{Rows: cfg.growthRows, Days: seedDays, KeepPayload: retentionKeepPayload, KeepKeys: retentionKeepKeys,
		Conns: retentionConns, PruneWALBytes: -1}
	url, _, err := hist.get(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	probe, err := newPool(ctx, url, 2, "bench-probe")
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	pruner, err := newPool(ctx, url, 1, "bench-prune")
	if err != nil {
		return nil, nil, err
	}
	defer pruner.Close()
	ingest, err := newPool(ctx, url, retentionConns, "bench-ingest", "synchronous_commit", "on")
	if err != nil {
		return nil, nil, err
	}
	defer ingest.Close()
	if err := warm(ctx, ingest, retentionConns, callIngest(ingestSQL)); err != nil {
		return nil, nil, err
	}
	var sample []string
	var samples [][2]string
	if err := probe.QueryRow(ctx, `SELECT coalesce(array_agg(provider || ' ' || external_id), '{}') FROM (
			SELECT provider, external_id FROM webhooks.keys
			WHERE received_at < now() - $1::interval - interval '1 day' LIMIT $2) AS k`, retentionKeepPayload, retentionSampleKeys).Scan(&sample); err != nil {
		return res, nil, fmt.Errorf("sample keys: %w", err)
	}
	for _, s := range sample {
		var p, k string
		if _, err := fmt.Sscan(s, &p, &k); err == nil {
			samples = append(samples, [2]string{p, k})
		}
	}
	res.SampleKeys = len(samples)
	counts := func(days, events, old *int64) {
		_ = probe.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhooks.history_days WHERE state = 'live'),
			(SELECT coalesce(sum(greatest(c.reltuples, 0)), 0)::bigint FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
			 WHERE i.inhparent = 'webhooks.history'::regclass),
			(SELECT count(*) FROM webhooks.keys WHERE received_at < now() - $1::interval)`, retentionKeepPayload).Scan(days, events, old)
	}
	counts(&res.DaysBefore, &res.EventsBefore, &res.OldKeysBefore)
	if _, err := probe.Exec(ctx, `CHECKPOINT`); err != nil {
		log.Warn("checkpoint", "error", err)
	}
	var since time.Time
	if err := probe.QueryRow(ctx, `SELECT now()`).Scan(&since); err != nil {
		return res, nil, err
	}
	pgssReset(ctx, env, probe)

	provider := "r-live"
	load := startIngestLoad(ctx, ingest, retentionConns, provider)
	loadStart := time.Now()
	sleepCtx(ctx, cfg.retentionBaseline)
	log.Info("retention: prune", "keep_payload", retentionKeepPayload, "days", res.DaysBefore)
	w0 := readWalPos(ctx, probe)
	pruneStart := time.Now()
	var last []byte
	for res.Calls < 1000 && ctx.Err() == nil {
		t0 := time.Now()
		if err := pruner.QueryRow(ctx, `SELECT webhooks.prune(keep_payload => $1::interval, keep_keys => $2::interval)`,
			retentionKeepPayload, retentionKeepKeys).Scan(&last); err != nil {
			load.finish()
			return res, nil, fmt.Errorf("prune: %w", err)
		}
		res.Calls++
		res.CallSeconds = append(res.CallSeconds, round3(time.Since(t0).Seconds()))
		var rep pruneReport
		if err := json.Unmarshal(last, &rep); err != nil {
			load.finish()
			return res, nil, fmt.Errorf("prune: %w", err)
		}
		res.DaysDropped += rep.Days
		res.PayloadsPruned += rep.Payloads
		res.KeysDeleted += rep.Events
		if rep.Busy != "" {
			res.Busy = append(res.Busy, rep.Busy)
		}
		if !rep.More {
			break
		}
	}
	pruneEnd := time.Now()
	w1 := readWalPos(ctx, probe)
	res.Seconds = round3(pruneEnd.Sub(pruneStart).Seconds())
	res.WALBytes = w1.lsn - w0.lsn
	res.Last = string(last)
	sleepCtx(ctx, cfg.retentionBaseline/3)
	load.finish()
	if env.pgss {
		var wal int64
		for _, st := range pgssMatch(ctx, env, probe, `webhooks\.prune`) {
			wal += st.WALByte
		}
		res.PruneWALBytes, res.PruneWALKnown = wal, true
		res.Statements = pgssMatch(ctx, env, probe, `webhooks\.prune|ingest_webhook`)
	}
	res.BeforeMS, _, _, res.BeforePerS = load.window(loadStart.Add(cfg.retentionBaseline/5), pruneStart.Add(-time.Millisecond))
	res.DuringMS, res.DuringCalls, res.DuringErrors, res.DuringPerS = load.window(pruneStart, pruneEnd)
	res.IngestErrors, res.FirstError = load.errs, load.firstErr
	counts(&res.DaysAfter, &res.EventsAfter, &res.OldKeysAfter)
	res.SampleDuplicates = redeliver(ctx, probe, samples)

	a, err := runAudit(ctx, probe, load.auditInput("ingest during prune", recentEvents(since), since))
	if err != nil {
		return res, nil, err
	}
	res.Audit = a.OK
	log.Info("retention", "prune_s", res.Seconds, "days_dropped", res.DaysDropped, "wal_mib", round1(float64(res.WALBytes)/(1<<20)),
		"ingest_max_ms", res.DuringMS.Max, "errors", res.IngestErrors, "duplicates", fmt.Sprintf("%d/%d", res.SampleDuplicates, res.SampleKeys))
	if res.SampleDuplicates != res.SampleKeys || res.OldKeysAfter < res.OldKeysBefore {
		return res, []audit{a}, fmt.Errorf("keys lost by prune(): %d of %d keys of dropped days answered duplicate; keys older than %s %d before, %d after",
			res.SampleDuplicates, res.SampleKeys, retentionKeepPayload, res.OldKeysBefore, res.OldKeysAfter)
	}
	return res, []audit{a}, nil
}

// redeliver delivers the keys again through ingest_webhook() and counts the
// answers duplicate.
func redeliver(ctx context.Context, pool *pgxpool.Pool, keys [][2]string) int {
	n := 0
	for _, k := range keys {
		var outcome string
		if err := pool.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_webhook($1, $2, 'redelivery', '{"late": true}'::jsonb)`, k[0], k[1]).Scan(&outcome); err == nil && outcome == "duplicate" {
			n++
		}
	}
	return n
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
