package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// audit is the exactly-once check of one delivering scenario, computed from
// the database after the run. The client only contributes which keys it saw
// acknowledged (and which it forged); every count below is read back from
// the tables.
type audit struct {
	Scenario string `json:"scenario"`
	// Deliveries is how many deliveries were sent (calls or requests).
	Deliveries int64 `json:"deliveries"`
	// Acked is how many were acknowledged (a row returned / HTTP 200).
	Acked int64 `json:"acked"`
	// Errors is deliveries that failed (neither acknowledged nor an expected
	// rejection).
	Errors int64 `json:"errors"`
	// DistinctEvents is the number of distinct keys acknowledged.
	DistinctEvents int64 `json:"distinct_events"`
	// Created is the number of rows the database holds for the scenario.
	Created int64 `json:"created"`
	// CreatedAnswers is how many deliveries were answered "created" (must
	// equal Created: one first delivery per event).
	CreatedAnswers int64 `json:"created_answers"`
	// Lost is acknowledged keys with no row.
	Lost int64 `json:"lost"`
	// Rejected is forged deliveries sent; RejectedRows the rows found for
	// their keys (must be 0).
	Rejected     int64 `json:"rejected"`
	RejectedRows int64 `json:"rejected_rows"`
	// Handler is true when a sql: handler processed the events.
	Handler bool `json:"handler"`
	// Processed is events in status processed; HandlerRuns the rows the
	// handler logged; ProcessedTwice the extra runs (runs beyond one per
	// event); NotRun events never run by the handler or not processed.
	Processed      int64 `json:"processed"`
	HandlerRuns    int64 `json:"handler_runs"`
	ProcessedTwice int64 `json:"processed_twice"`
	NotRun         int64 `json:"not_run"`

	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
}

// auditInput is what a scenario knows after its run.
type auditInput struct {
	scenario string
	// table is webhooks.events (default), bench.raw, or a parenthesised
	// subquery of either (the audit gives it an alias).
	table     string
	providers []string
	// acked are the (provider, key) pairs acknowledged; forged the keys of
	// deliveries with a bad signature (provider = providers[0]).
	acked          [][2]string
	forged         []string
	deliveries     int64
	errors         int64
	createdAnswers int64 // -1 when not known (the plain insert returns none)
	handler        bool
	// preloaded events are not deliveries: only the handler part is audited.
	preloaded bool
	// since, when set, narrows the scenario's rows to those received at or
	// after it (the growth scenario shares its provider with millions of
	// older rows).
	since time.Time
}

func runAudit(ctx context.Context, pool *pgxpool.Pool, in auditInput) (audit, error) {
	a := audit{Scenario: in.scenario, Deliveries: in.deliveries, Acked: int64(len(in.acked)), Errors: in.errors,
		Rejected: int64(len(in.forged)), Handler: in.handler, CreatedAnswers: in.createdAnswers}
	table := in.table
	if table == "" {
		table = "webhooks.events"
	}
	if !in.preloaded {
		if err := loadKeys(ctx, pool, in.scenario, in.acked); err != nil {
			return a, err
		}
		err := pool.QueryRow(ctx, `
			WITH a AS (SELECT DISTINCT provider, external_id FROM bench.acked WHERE scenario = $1)
			SELECT count(*),
			       count(*) FILTER (WHERE NOT EXISTS (
			           SELECT 1 FROM `+table+` AS e WHERE e.provider = a.provider AND e.external_id = a.external_id))
			FROM a`, in.scenario).Scan(&a.DistinctEvents, &a.Lost)
		if err != nil {
			return a, fmt.Errorf("audit %s: %w", in.scenario, err)
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` AS e WHERE e.provider = ANY($1) AND e.received_at >= $2`, in.providers, in.since).Scan(&a.Created); err != nil {
			return a, fmt.Errorf("audit %s: %w", in.scenario, err)
		}
		if len(in.forged) > 0 {
			fk := make([][2]string, len(in.forged))
			for i, k := range in.forged {
				fk[i] = [2]string{in.providers[0], k}
			}
			if err := loadKeys(ctx, pool, "forged:"+in.scenario, fk); err != nil {
				return a, err
			}
			if err := pool.QueryRow(ctx, `
				SELECT count(*) FROM `+table+` AS e
				WHERE EXISTS (SELECT 1 FROM bench.acked AS f WHERE f.scenario = $1 AND f.provider = e.provider AND f.external_id = e.external_id)`,
				"forged:"+in.scenario).Scan(&a.RejectedRows); err != nil {
				return a, fmt.Errorf("audit %s: %w", in.scenario, err)
			}
		}
	}
	if in.handler {
		var distinctRuns int64
		err := pool.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM webhooks.events WHERE provider = ANY($1) AND received_at >= $2 AND status = 'processed'),
			       count(*), count(DISTINCT h.event_id)
			FROM bench.handled AS h JOIN webhooks.events AS e ON e.id = h.event_id
			WHERE e.provider = ANY($1) AND e.received_at >= $2`, in.providers, in.since).Scan(&a.Processed, &a.HandlerRuns, &distinctRuns)
		if err != nil {
			return a, fmt.Errorf("audit %s: %w", in.scenario, err)
		}
		a.ProcessedTwice = a.HandlerRuns - distinctRuns
		err = pool.QueryRow(ctx, `
			SELECT count(*) FROM webhooks.events AS e
			WHERE e.provider = ANY($1) AND e.received_at >= $2
			  AND (e.status <> 'processed' OR NOT EXISTS (SELECT 1 FROM bench.handled AS h WHERE h.event_id = e.id))`,
			in.providers, in.since).Scan(&a.NotRun)
		if err != nil {
			return a, fmt.Errorf("audit %s: %w", in.scenario, err)
		}
	}
	a.check(in)
	return a, nil
}

func (a *audit) check(in auditInput) {
	bad := func(f string, args ...any) { a.Problems = append(a.Problems, fmt.Sprintf(f, args...)) }
	if a.Lost != 0 {
		bad("%d acknowledged keys have no row", a.Lost)
	}
	if !in.preloaded {
		if a.Created != a.DistinctEvents {
			bad("created %d != distinct events %d", a.Created, a.DistinctEvents)
		}
		if a.CreatedAnswers >= 0 && a.CreatedAnswers != a.Created {
			bad("%d deliveries were answered created for %d rows", a.CreatedAnswers, a.Created)
		}
	}
	if a.RejectedRows != 0 {
		bad("%d rows for forged deliveries", a.RejectedRows)
	}
	if a.ProcessedTwice != 0 {
		bad("%d extra handler runs", a.ProcessedTwice)
	}
	if a.NotRun != 0 {
		bad("%d events not run exactly once by the handler", a.NotRun)
	}
	if a.Errors != 0 {
		bad("%d deliveries failed", a.Errors)
	}
	a.OK = len(a.Problems) == 0
}

// loadKeys copies keys into bench.acked under scenario.
func loadKeys(ctx context.Context, pool *pgxpool.Pool, scenario string, keys [][2]string) error {
	_, err := pool.CopyFrom(ctx, pgx.Identifier{"bench", "acked"}, []string{"scenario", "provider", "external_id"},
		pgx.CopyFromSlice(len(keys), func(i int) ([]any, error) {
			return []any{scenario, keys[i][0], keys[i][1]}, nil
		}))
	if err != nil {
		return fmt.Errorf("audit %s: load keys: %w", scenario, err)
	}
	_, _ = pool.Exec(ctx, `ANALYZE bench.acked`)
	return nil
}

func (a audit) String() string {
	s := fmt.Sprintf("%s: deliveries %d, distinct %d, created %d, lost %d", a.Scenario, a.Deliveries, a.DistinctEvents, a.Created, a.Lost)
	if a.Rejected > 0 {
		s += fmt.Sprintf(", forged %d → rows %d", a.Rejected, a.RejectedRows)
	}
	if a.Handler {
		s += fmt.Sprintf(", processed %d, runs %d, twice %d, not run %d", a.Processed, a.HandlerRuns, a.ProcessedTwice, a.NotRun)
	}
	if !a.OK {
		s += " — FAIL: " + strings.Join(a.Problems, "; ")
	}
	return s
}
