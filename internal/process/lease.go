package process

import (
	"context"
	"log/slog"

	"github.com/pginbox/pginbox/pginboxtype"
)

// A leaseStrategy is one way of holding pending events while the handler
// runs on them (the lease) and of recording what became of each. Each lives
// in a file of its own:
//
//   - rowLockSQL (rowlock_sql.go): a sql: handler under the row lock, one
//     webhooks.process_pending() statement per batch — the default for sql:.
//   - rowLockGo (rowlock_go.go): a Go Handler under the row lock, in the
//     worker's own transaction (PGINBOX_LEASE_MODE=row-lock).
//   - twoPhaseBatch (twophase_batch.go): claimed events, one
//     webhooks.process_batch() statement per batch (sql:).
//   - twoPhaseEvent (twophase_event.go): claimed events, one transaction
//     with a savepoint per event (a Go Handler, or a sql: one event by event).
//   - external (external.go): claimed events, each run outside any
//     transaction and completed right after (http:).
//
// Which one runs a batch, and what happens when one fails, is the policy
// (policy.go); nothing else chooses.
type leaseStrategy interface {
	// handle runs the handler on one batch and returns how many of its
	// events it dealt with. A row-lock strategy takes up to b.limit
	// pending events itself; an error means its statement or transaction
	// did not go through, so nothing it did remains and the events are
	// pending again. A two-phase strategy runs b.events, claimed before; the
	// events past the count it returns are released by the caller, and an
	// error (twoPhaseBatch only) means the batch is still to run.
	handle(ctx, hctx context.Context, b *batch) (int, error)
}

// batch is one unit of work handed to a lease strategy. ctx ends at
// shutdown (no new event starts); hctx, the handlers' context, ends
// ShutdownTimeout later.
type batch struct {
	// worker is the worker's name, the events' locked_by.
	worker string
	log    *slog.Logger
	// limit is how many pending events a row-lock strategy may take.
	limit int
	// events are a two-phase strategy's claimed events.
	events []*pginboxtype.Event
	// st tells the heartbeat which events are still to finish.
	st *batchState
	// leftLeases is set by a two-phase strategy that could not record what
	// became of some of its events (a statement that failed, its outcome
	// unknown): they may still be processing under the worker's name, and
	// the worker takes them back before its next claim.
	leftLeases bool
}

// statementError is a batch statement that did not go through: its work
// rolled back. timedOut says it overran its time limit.
type statementError struct {
	err      error
	timedOut bool
}

func (e *statementError) Error() string { return e.err.Error() }
func (e *statementError) Unwrap() error { return e.err }
