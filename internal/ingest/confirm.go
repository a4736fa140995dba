package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/metrics"
)

// Why a commit went unconfirmed: the label values of
// pginbox_ingest_commit_unconfirmed_total (metrics.New serves each from the
// start).
const (
	// reasonSyncRepCancelled: the server warned that the commit's wait for
	// the synchronous standbys was cancelled (the ingest deadline's cancel
	// request, or an operator's pg_cancel_backend or pg_terminate_backend).
	// The transaction is committed locally and may be on no standby.
	reasonSyncRepCancelled = "sync_rep_cancelled"
	// reasonDeadline: the statement and its commit returned success, but only
	// after the ingest deadline had sent its cancel request (no warning
	// seen): the commit's wait may have been cut short.
	reasonDeadline = "deadline"
	// reasonNoAnswer: the connection failed, or was given up 5 s after the
	// deadline's cancel request, after the statement was sent and before its
	// answer: the transaction may or may not have committed.
	reasonNoAnswer = "no_answer"
)

// unconfirmedError is an ingest transaction whose commit was not confirmed:
// its deliveries may be stored (locally at least), but neither durability
// nor its absence is known, so each is answered 503 and the provider's retry
// tells (a duplicate, answered 2xx once its own commit is confirmed).
type unconfirmedError struct {
	reason string
	err    error // the statement's error, or the context's; nil when it succeeded
}

func (e *unconfirmedError) Error() string {
	what := map[string]string{
		reasonSyncRepCancelled: "the wait for the synchronous standbys was cancelled; committed locally only",
		reasonDeadline:         "the statement and its commit succeeded only after the ingest deadline",
		reasonNoAnswer:         "the connection ended before the commit's answer; outcome unknown",
	}[e.reason]
	if e.err == nil {
		return fmt.Sprintf("commit not confirmed (%s): %s", e.reason, what)
	}
	return fmt.Sprintf("commit not confirmed (%s): %s: %v", e.reason, what, e.err)
}

func (e *unconfirmedError) Unwrap() error { return e.err }

// unconfirmedReason returns why err says a commit went unconfirmed, "" when
// it does not.
func unconfirmedReason(err error) string {
	var u *unconfirmedError
	if errors.As(err, &u) {
		return u.reason
	}
	return ""
}

// syncRepKey marks, in a connection's CustomData, that the server cut a
// commit's wait for the synchronous standbys short on it.
const syncRepKey = "pginbox.ingest.sync_rep_cancelled"

// syncRepCancelled reports whether n is the server's warning that a commit's
// wait for synchronous replication ended before the standbys confirmed it:
// "canceling wait for synchronous replication due to user request" (a
// cancel request) or "canceling the wait for synchronous replication and
// terminating connection due to administrator command", both with DETAIL
// "The transaction has already committed locally, but might not have been
// replicated to the standby." Every message raised in SyncRepWaitForLSN is
// one of them; the routine name is never translated, the message text is
// the fallback for a server that does not send it.
func syncRepCancelled(n *pgconn.Notice) bool {
	return n.Routine == "SyncRepWaitForLSN" ||
		strings.Contains(n.Message, "wait for synchronous replication") ||
		strings.Contains(n.Detail, "committed locally, but might not have been replicated")
}

// confirmed runs one statement that is its own transaction (run) on a
// connection of pool and tells whether its commit is confirmed: it returns
// an *unconfirmedError when the server warned that the commit's wait for the
// synchronous standbys was cut short (the pool's connections must report
// notices to [Notices]), when the statement succeeded only after ctx ended,
// or when the connection failed during the statement (unless pgx knows it
// sent nothing). An error the server answered with means the transaction
// rolled back: returned as is.
func confirmed(ctx context.Context, pool *pgxpool.Pool, run func(*pgx.Conn) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire a connection: %w", err)
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	delete(pc.CustomData(), syncRepKey)
	err = run(conn.Conn())
	_, cut := pc.CustomData()[syncRepKey]
	delete(pc.CustomData(), syncRepKey)
	var pgErr *pgconn.PgError
	switch {
	case cut:
		return &unconfirmedError{reason: reasonSyncRepCancelled, err: err}
	case err == nil && ctx.Err() != nil:
		return &unconfirmedError{reason: reasonDeadline, err: context.Cause(ctx)}
	case err != nil && !errors.As(err, &pgErr) && pc.IsClosed() && (!pgconn.SafeToRetry(err) || errors.Is(err, pgconn.ErrConnClosed)):
		// The connection was open when acquired and failed during the
		// statement. pgx says "conn closed" (and safe to retry) when it
		// finds the connection closed under it, the statement sent or not:
		// only a failure it knows came before sending anything is safe.
		return &unconfirmedError{reason: reasonNoAnswer, err: err}
	}
	return err
}

// countUnconfirmed counts n deliveries in pginbox_ingest_commit_unconfirmed_total
// when err says their commit went unconfirmed.
func countUnconfirmed(m *metrics.Set, err error, n int) {
	if reason := unconfirmedReason(err); reason != "" {
		m.IngestUnconfirmed.WithLabelValues(reason).Add(float64(n))
	}
}
