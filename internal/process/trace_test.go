package process

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/tracing"
	"github.com/pginbox/pginbox/pginboxtype"
)

// TestProcessSpansOfGoHandlers: with a Go handler, under the row lock
// (row-lock-go) and under the two-phase lease (two-phase-event), each
// handler run is a pginbox.process span that is the child of the span
// stored with the event, carries its event id and attempt, has an error
// status when the handler fails, and is the span in the handler's context.
// (The sql: modes are covered end to end, through a real OTLP receiver, by
// tests/TestTracesJoinDeliveryAndProcessing.)
func TestProcessSpansOfGoHandlers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ leaseMode, spanMode string }{
		{"row-lock", modeRowLockGo},
		{"two-phase", modeTwoPhaseEvent},
	} {
		t.Run(tc.leaseMode, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t, 4)
			ctx := context.Background()
			const okParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
			const badParent = "00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"
			for _, st := range []struct {
				sql  string
				args []any
			}{
				{`SELECT webhooks.ingest_webhook('p', 'ok', 't', '{}', trace_parent => $1)`, []any{okParent}},
				{`SELECT webhooks.ingest_webhook('p', 'bad', 't', '{}', trace_parent => $1)`, []any{badParent}},
				{`SELECT webhooks.ingest_webhook('p', 'none', 't', '{}')`, nil},
				{`UPDATE webhooks.events SET max_attempts = 1 WHERE external_id = 'bad'`, nil},
			} {
				if _, err := pool.Exec(ctx, st.sql, st.args...); err != nil {
					t.Fatal(err)
				}
			}
			rec := tracetest.NewSpanRecorder()
			tr := tracing.NewForProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
			inCtx := map[string]string{}
			h := pginboxtype.HandlerFunc(func(ctx context.Context, _ pgx.Tx, ev *pginboxtype.Event) error {
				inCtx[ev.ExternalID] = tracing.TraceParent(ctx)
				if ev.ExternalID == "bad" {
					return errors.New("refused")
				}
				return nil
			})
			w := &Workers{
				Pool: pool, Handler: h, N: 1, BatchSize: 10, Lease: 10 * time.Second, LeaseMode: tc.leaseMode,
				PollInterval: 50 * time.Millisecond, ShutdownTimeout: 5 * time.Second, HandlerTimeout: 10 * time.Second,
				Name: "traced", Metrics: metrics.New(pool), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Tracing: tr,
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); w.Run(runCtx) }()
			deadline := time.Now().Add(30 * time.Second)
			for {
				var n int
				if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.events WHERE status IN ('processed', 'dead')`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n == 3 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of 3 events done after 30 s", n)
				}
				time.Sleep(50 * time.Millisecond)
			}
			stop()
			<-done

			byEvent := map[string]sdktrace.ReadOnlySpan{}
			ids := map[int64]string{}
			rows, _ := pool.Query(ctx, `SELECT id, external_id FROM webhooks.events`)
			for rows.Next() {
				var id int64
				var key string
				if err := rows.Scan(&id, &key); err != nil {
					t.Fatal(err)
				}
				ids[id] = key
			}
			for _, s := range rec.Ended() {
				if s.Name() != tracing.ProcessSpanName {
					continue
				}
				for _, a := range s.Attributes() {
					if a.Key == tracing.AttrEventID {
						byEvent[ids[a.Value.AsInt64()]] = s // the last run of the event
					}
				}
			}
			for key, parent := range map[string]string{"ok": okParent, "bad": badParent} {
				s, ok := byEvent[key]
				if !ok {
					t.Fatalf("no pginbox.process span for %s", key)
				}
				want, _ := tracing.ParseTraceParent(parent)
				if s.SpanContext().TraceID() != want.TraceID() || s.Parent().SpanID() != want.SpanID() {
					t.Errorf("%s: span in trace %s under %s, want the stored %s", key, s.SpanContext().TraceID(), s.Parent().SpanID(), parent)
				}
				if got := tracing.TraceParent(traceCtx(s)); inCtx[key] != got {
					t.Errorf("%s: handler's context carried %q, want its run's span %q", key, inCtx[key], got)
				}
				if (s.Status().Code == codes.Error) != (key == "bad") {
					t.Errorf("%s: status %v", key, s.Status())
				}
				var mode string
				var attempt int64
				for _, a := range s.Attributes() {
					switch a.Key {
					case tracing.AttrLeaseMode:
						mode = a.Value.AsString()
					case tracing.AttrAttempt:
						attempt = a.Value.AsInt64()
					}
				}
				if mode != tc.spanMode || attempt != 1 {
					t.Errorf("%s: lease mode %q attempt %d, want %s, 1", key, mode, attempt, tc.spanMode)
				}
			}
			if s, ok := byEvent["none"]; !ok || s.Parent().IsValid() {
				t.Errorf("an event stored without a trace context: its run should be a root span (found %v)", ok)
			}
		})
	}
}

// traceCtx is a context holding s's span context.
func traceCtx(s sdktrace.ReadOnlySpan) context.Context {
	return trace.ContextWithSpanContext(context.Background(), s.SpanContext())
}

// TestTraceRowsReadQueueThenHistory: the spans of a batch statement read
// the events' stored trace context from the queue, and only the events
// move_history() moved on since from history:
// over five days of history, the first read touches no day slice, and an
// event already moved is still found, with its trace parent.
func TestTraceRowsReadQueueThenHistory(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 2)
	pgtest.SeedHistoryDays(t, pool, 5, 200)
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := context.Background()
	ids := map[string]int64{}
	for _, key := range []string{"queued", "moved"} {
		var id int64
		if err := pool.QueryRow(ctx, `SELECT event_id FROM webhooks.ingest_webhook('p', $1, 't', '{}', trace_parent => $2)`,
			key, parent).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[key] = id
	}
	pgtest.Exec(t, pool, `UPDATE webhooks.inbox SET status = 'processed', processed_at = now(), claimed_at = now(), attempts = 1
		WHERE external_id = 'moved'`)
	pgtest.Exec(t, pool, `SELECT webhooks.move_history()`)
	var moved int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.history WHERE external_id = 'moved'`).Scan(&moved); err != nil || moved != 1 {
		t.Fatalf("moved %d (%v), want the event in history", moved, err)
	}
	var plan string
	if err := pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+traceRowsSQL, []int64{ids["queued"], ids["moved"]}).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if days, _ := pgtest.HistoryReads(t, pgtest.ParsePlan(t, plan)); len(days) > 0 {
		t.Fatalf("traceRowsSQL reads history (%v):\n%s", days, plan)
	}
	w := &Workers{Pool: pool, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	evs := w.traceRows(ctx, []int64{ids["queued"], ids["moved"]})
	for key, id := range ids {
		if ev := evs[id]; ev == nil || ev.Provider != "p" || ev.Trace.Parent != parent {
			t.Errorf("%s: %+v, want its provider and trace parent", key, ev)
		}
	}
}
