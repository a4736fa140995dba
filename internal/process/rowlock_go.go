package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/tracing"
	"github.com/pginbox/pginbox/pginboxtype"
)

// lockSQL locks a batch for a Go Handler in the open transaction, and bounds
// how long the transaction may then sit idle (a handler hung in Go): past
// it the server ends the session, the transaction rolls back and the
// events are pending again.
// The Event's LockedUntil is when the batch times out: the row lock lasts
// no longer.
const lockSQL = `SELECT id, provider, external_id, event_type, payload, source, received_at, attempts, max_attempts,
	       now() + $3::text::interval AS locked_until, coalesce(trace_parent, ''), coalesce(trace_link, '')
	FROM webhooks._lock_pending($1, $2)
	WHERE set_config('idle_in_transaction_session_timeout', $3::text, true) IS NOT NULL`

// rowLockGo runs a Go Handler with the row lock as the lease, in one
// transaction per batch (PGINBOX_LEASE_MODE=row-lock): lock up to BatchSize pending events FOR UPDATE
// SKIP LOCKED, run the handler on each inside one savepoint, mark them all
// processed with one statement, commit — no claim to commit first, one row
// version per event, and a fixed handful of round trips per batch. When a
// handler fails, the savepoint rolls back and the batch runs again event by
// event, each in a savepoint of its own: a failing event is recorded with
// _fail_pending() (its attempt counted, retried with backoff, dead at
// max_attempts) and the others commit. The whole batch is bounded by
// batchStatementTimeout.
type rowLockGo struct{ *Workers }

var _ leaseStrategy = rowLockGo{}

// handle runs one batch. It returns how many events it dealt with, or an
// error when the transaction did not commit; then nothing it did remains.
func (w rowLockGo) handle(_, hctx context.Context, b *batch) (int, error) {
	log, name, size := b.log, b.worker, b.limit
	limit := w.batchStatementTimeout()
	// A handler deaf to its context would hold the worker (and its batch's
	// row locks) for good: past the limit and a grace second the worker
	// abandons the batch to its goroutine and goes on; the server ends that
	// session once it has sat idle in its transaction as long (lockSQL), so
	// the events are pending again, and the caller's fallback to the
	// two-phase lease counts the next attempts.
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := w.tx(hctx, log, name, size, limit)
		done <- result{n, err}
	}()
	grace := time.NewTimer(limit + time.Second)
	defer grace.Stop()
	select {
	case r := <-done:
		return r.n, r.err
	case <-grace.C:
		err := fmt.Errorf("a handler overran %s and ignores its context: its batch is abandoned and rolls back", limit)
		if hctx.Err() == nil {
			err = fmt.Errorf("%w: %w", errLockBatchTimedOut, err)
		}
		return 0, err
	}
}

// tx is handle's transaction. An error from a
// transaction that ran out of its time limit — in any statement, handler
// or commit — carries errLockBatchTimedOut.
func (w rowLockGo) tx(hctx context.Context, log *slog.Logger, name string, size int, limit time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(hctx, limit)
	defer cancel()
	n, err := w.lockedGoBatch(ctx, log, name, size, limit)
	if err != nil && ctx.Err() != nil && hctx.Err() == nil && !errors.Is(err, errLockBatchTimedOut) {
		err = fmt.Errorf("%w: %w", errLockBatchTimedOut, err)
	}
	return n, err
}

// lockedGoBatch locks, runs and commits one Go-handler batch under ctx.
func (w rowLockGo) lockedGoBatch(ctx context.Context, log *slog.Logger, name string, size int, limit time.Duration) (int, error) {
	tx, err := w.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit
	rows, err := tx.Query(ctx, lockSQL, name, size, fmt.Sprintf("%dms", limit.Milliseconds()+1000))
	if err != nil {
		return 0, fmt.Errorf("lock: %w", err)
	}
	batch, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return 0, fmt.Errorf("lock: %w", err)
	}
	if len(batch) == 0 {
		return 0, tx.Commit(ctx)
	}
	w.Metrics.Claimed.Add(float64(len(batch)))
	ids, _ := leases(batch)
	failed := map[string]int{}
	completed, err := w.runLockedBatch(ctx, tx, batch, ids)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("batch: %w", err)
		}
		// A handler failed: event by event, each in a savepoint.
		completed = 0
		for _, ev := range batch {
			status, err := w.runLockedOne(ctx, tx, ev)
			if err != nil {
				return 0, err
			}
			if status == string(pginboxtype.StatusProcessed) {
				completed++
				continue
			}
			failed[status]++
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	for status, n := range failed {
		log.Info("handlers failed", "status", status, "events", n)
	}
	w.recordOutcomes(completed, failed, 0)
	return len(batch), nil
}

// runLockedBatch runs the handler on every event inside one savepoint and
// marks them all processed; any handler error rolls the savepoint back.
func (w rowLockGo) runLockedBatch(ctx context.Context, tx pgx.Tx, batch []*pginboxtype.Event, ids []int64) (int, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("savepoint: %w", err)
	}
	for _, ev := range batch {
		if err := ctx.Err(); err != nil { // out of time: no handler starts after the limit
			_ = sp.Rollback(context.Background())
			return 0, err
		}
		rctx, span := w.startRun(ctx, ev, ev.Attempt, modeRowLockGo)
		err := w.safeHandle(rctx, sp, ev)
		tracing.EndProcess(span, err, time.Time{})
		if err != nil {
			_ = sp.Rollback(ctx)
			return 0, err
		}
	}
	var n int
	if err := sp.QueryRow(ctx, `SELECT webhooks._mark_processed($1)`, ids).Scan(&n); err != nil {
		_ = sp.Rollback(ctx)
		return 0, fmt.Errorf("mark processed: %w", err)
	}
	if n != len(batch) {
		_ = sp.Rollback(ctx)
		return 0, fmt.Errorf("mark processed: %d of %d locked events", n, len(batch))
	}
	if err := sp.Commit(ctx); err != nil {
		return 0, fmt.Errorf("release savepoint: %w", err)
	}
	return n, nil
}

// runLockedOne runs one locked event in a savepoint of its own and returns
// its new status: processed, or pending/dead after _fail_pending(). An
// error means the transaction itself is broken.
func (w rowLockGo) runLockedOne(ctx context.Context, tx pgx.Tx, ev *pginboxtype.Event) (string, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("savepoint: %w", err)
	}
	ctx, span := w.startRun(ctx, ev, ev.Attempt, modeRowLockGo)
	herr := w.safeHandle(ctx, sp, ev)
	defer func() { tracing.EndProcess(span, herr, time.Time{}) }()
	if herr == nil {
		var n int
		herr = sp.QueryRow(ctx, `SELECT webhooks._mark_processed($1)`, []int64{ev.ID}).Scan(&n)
		if herr == nil && n == 1 {
			if err := sp.Commit(ctx); err != nil {
				return "", fmt.Errorf("release savepoint: %w", err)
			}
			return string(pginboxtype.StatusProcessed), nil
		}
		if herr == nil {
			herr = fmt.Errorf("mark processed: event %d is no longer pending", ev.ID)
		}
	}
	if err := sp.Rollback(ctx); err != nil {
		return "", fmt.Errorf("rollback to savepoint: %w", err)
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	var status *string
	if err := tx.QueryRow(ctx, `SELECT webhooks._fail_pending($1, $2)`, ev.ID, herr.Error()).Scan(&status); err != nil {
		return "", fmt.Errorf("fail: %w", err)
	}
	if status == nil {
		return "", fmt.Errorf("fail: event %d is no longer pending", ev.ID)
	}
	w.Log.Info("handler failed", "event", ev.ID, "attempt", ev.Attempt, "status", *status, "error", herr)
	return *status, nil
}
