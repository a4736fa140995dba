package process

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/tracing"
	"github.com/pginbox/pginbox/pginboxtype"
)

// twoPhaseEvent runs a claimed batch of a database handler (a Go Handler,
// or a sql: one event by event) in one transaction with a savepoint per
// event: each event's writes and its complete() commit together, an event
// whose handler fails or whose lease was lost rolls back to its savepoint
// alone, and the batch commits once — exactly-once effects at batch speed.
//
// The transaction bounds how long it may sit idle on the server
// (beginSQL): a network fault that cuts the worker off leaves the backend
// idle in transaction, holding row locks on the events it completed, and
// nothing else would end it for hours (TCP keepalive).
type twoPhaseEvent struct{ *Workers }

var _ leaseStrategy = twoPhaseEvent{}

// handle returns how many events it dealt with (the rest are released).
func (w twoPhaseEvent) handle(ctx, hctx context.Context, b *batch) (int, error) {
	log, name, batch, st := b.log, b.worker, b.events, b.st
	bctx, cancel := bounded(hctx)
	tx, err := w.Pool.BeginTx(bctx, pgx.TxOptions{BeginQuery: w.beginSQL()})
	cancel()
	if err != nil {
		b.leftLeases = true
		log.Warn("begin failed; the worker takes the batch back before its next claim", "error", err)
		return len(batch), nil
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit
	var completed, lost int
	failed := map[string]int{}
	i := 0
	for ; i < len(batch); i++ {
		if ctx.Err() != nil {
			break // shutting down: hand the rest back
		}
		ev := batch[i]
		st.start(i)
		rctx, span := w.startRun(hctx, ev, ev.Attempt, modeTwoPhaseEvent)
		if err := w.runOne(rctx, tx, ev, name); err != nil {
			if hctx.Err() != nil {
				tracing.EndProcess(span, err, time.Time{})
				return len(batch), nil // shutdown deadline: leave the batch to the rescuer
			}
			status, ferr := failInTx(rctx, tx, ev, name, err)
			tracing.EndProcess(span, err, time.Time{})
			if ferr != nil {
				b.leftLeases = true
				log.Warn("fail() failed; the batch rolls back and the worker takes it back before its next claim", "event", ev.ID, "error", ferr)
				return len(batch), nil
			}
			if status == "" {
				lost++
			} else {
				failed[status]++
				log.Info("handler failed", "event", ev.ID, "attempt", ev.Attempt, "status", status, "error", err)
			}
			continue
		}
		tracing.EndProcess(span, nil, time.Time{})
		completed++
	}
	cctx, cancel := bounded(hctx)
	err = tx.Commit(cctx)
	cancel()
	if err != nil {
		// Committed or not, nothing of the batch is left to this
		// worker but leases: whatever is still processing under its name
		// is taken back (and run again, its writes rolled back) before
		// its next claim.
		b.leftLeases = true
		log.Warn("batch commit failed; the worker takes back what it did not complete before its next claim", "error", err, "events", i)
		return len(batch), nil
	}
	w.recordOutcomes(completed, failed, lost)
	return i, nil
}

// idleInTransaction is the longest the two-phase transaction may sit idle
// on the server: the longest gap between two of its statements is a
// handler call, which runs inside the transaction, so it is the handler
// timeout and recordTimeout more (the worker's next statement may itself
// take that long to arrive). Zero without a handler timeout: no bound.
func (w *Workers) idleInTransaction() time.Duration {
	if w.HandlerTimeout <= 0 {
		return 0
	}
	return w.HandlerTimeout + recordTimeout
}

// beginSQL begins the two-phase transaction and, with a handler timeout,
// sets its idle_in_transaction_session_timeout (idleInTransaction) in the
// same round trip: past it the server ends a session whose worker is gone
// (a partition, a half-open connection), its transaction rolls back and
// its row locks are released, so the worker's rescue_worker() can take
// its events back. SET LOCAL ends with the transaction, so a pooler in
// transaction mode hands the connection on unchanged.
func (w *Workers) beginSQL() string {
	d := w.idleInTransaction()
	if d <= 0 {
		return "BEGIN"
	}
	return fmt.Sprintf("BEGIN; SET LOCAL idle_in_transaction_session_timeout = %d", d.Milliseconds())
}

// errLeaseLost marks a completion refused by the fence.
var errLeaseLost = errors.New("lease lost")

// runOne runs the handler and complete() inside a savepoint of tx. Every
// statement of its own — SAVEPOINT, complete(), RELEASE and ROLLBACK TO —
// is bounded by recordTimeout, as every lease statement is.
func (w twoPhaseEvent) runOne(ctx context.Context, tx pgx.Tx, ev *pginboxtype.Event, name string) error {
	bctx, cancel := bounded(ctx)
	sp, err := tx.Begin(bctx)
	cancel()
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := w.safeHandle(ctx, sp, ev); err != nil {
		rollbackTo(ctx, sp)
		return err
	}
	if ctx.Err() != nil {
		rollbackTo(ctx, sp)
		return ctx.Err()
	}
	var ok bool
	cctx, cancel := bounded(ctx)
	err = sp.QueryRow(cctx, `SELECT webhooks.complete($1, $2, $3)`, ev.ID, name, ev.Attempt).Scan(&ok)
	cancel()
	if err != nil {
		rollbackTo(ctx, sp)
		return fmt.Errorf("complete: %w", err)
	}
	if !ok {
		rollbackTo(ctx, sp)
		return errLeaseLost
	}
	rctx, cancel := bounded(ctx)
	defer cancel()
	if err := sp.Commit(rctx); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

// rollbackTo rolls back to the event's savepoint, bounded by
// recordTimeout. Its error is dropped: if it did not go through, neither
// does anything after it on that connection, and the batch's next
// statement (fail() or the commit) reports it.
func rollbackTo(ctx context.Context, sp pgx.Tx) {
	rctx, cancel := bounded(ctx)
	defer cancel()
	_ = sp.Rollback(rctx)
}

// failInTx records the failure (fenced). It returns the new status, or ""
// when the lease was lost.
func failInTx(ctx context.Context, tx pgx.Tx, ev *pginboxtype.Event, name string, cause error) (string, error) {
	if errors.Is(cause, errLeaseLost) {
		return "", nil
	}
	var status *string
	ctx, cancel := bounded(ctx)
	defer cancel()
	if err := tx.QueryRow(ctx, `SELECT webhooks.fail($1, $2, $3, $4)`, ev.ID, name, ev.Attempt, cause.Error()).Scan(&status); err != nil {
		return "", fmt.Errorf("fail: %w", err)
	}
	if status == nil {
		return "", nil
	}
	return *status, nil
}
