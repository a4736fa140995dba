package database

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// cancelDeadlineDelay is how long after a context ends a statement may
// still run (its cancel request in flight) before the connection is given
// up.
const cancelDeadlineDelay = 5 * time.Second

// cancelHandler turns a cancelled context (a handler's timeout, a client
// gone) into a cancel request for the running statement and keeps the
// connection: pgx's default closes it, which would take a worker's open
// batch transaction with it, so one slow handler could not be failed alone.
//
// Unlike pgx's CancelRequestContextWatcherHandler it lets the cancel request
// run to its end — until the server (or pooler) closes that connection —
// even when the statement has already returned: PgBouncer 1.18 exits on a
// FATAL ("bad client state") when a cancel connection is closed while it is
// still forwarding the request, which is what the statement's own error
// arriving first used to do.
type cancelHandler struct {
	conn *pgconn.PgConn
	done chan struct{}
}

var _ ctxwatch.Handler = (*cancelHandler)(nil)

func newCancelHandler(c *pgconn.PgConn) ctxwatch.Handler { return &cancelHandler{conn: c} }

// HandleCancel sends the cancel request in the background and bounds the
// statement by a deadline on the connection.
func (h *cancelHandler) HandleCancel(context.Context) {
	h.done = make(chan struct{})
	deadline := time.Now().Add(cancelDeadlineDelay)
	_ = h.conn.Conn().SetDeadline(deadline)
	go func() {
		defer close(h.done)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		_ = h.conn.CancelRequest(ctx)
		// A cancel request is racy: the server may act on it a moment after
		// acknowledging it. Pausing keeps it off the connection's next
		// statement (pgx does the same).
		time.Sleep(100 * time.Millisecond)
	}()
}

// HandleUnwatchAfterCancel waits for the cancel request to finish, then
// lifts the deadline.
func (h *cancelHandler) HandleUnwatchAfterCancel() {
	<-h.done
	_ = h.conn.Conn().SetDeadline(time.Time{})
}
