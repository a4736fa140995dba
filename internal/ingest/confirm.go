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
	// answer, or the answer was a connection exception (SQLSTATE class 08,
	// a pooler's "server conn crashed?") or the server ending the session
	// (57P01-57P03): the transaction may or may not have committed.
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
// terminating connection due to administrator command", both WARNINGs
// raised in the routine SyncRepWaitForLSN. The routine name is never
// translated and no SQL can raise a message from it, so when the server
// sends one it alone decides. A server that sends no routine is matched on
// the WARNING severity and the start of the untranslated message. Never on
// the DETAIL, nor on text a caller chooses: pginbox's own unsigned-key
// NOTICE carries the delivery's external_id in its DETAIL, and a key that
// quotes the sync-rep DETAIL must not fail the batch it is in.
func syncRepCancelled(n *pgconn.Notice) bool {
	if n.Routine != "" {
		return n.Routine == "SyncRepWaitForLSN"
	}
	severity := n.SeverityUnlocalized
	if severity == "" {
		severity = n.Severity
	}
	return severity == "WARNING" &&
		(strings.HasPrefix(n.Message, "canceling wait for synchronous replication") ||
			strings.HasPrefix(n.Message, "canceling the wait for synchronous replication"))
}

// confirmed runs one statement that is its own transaction (run) on a
// connection of pool and tells whether its commit is confirmed: it returns
// an *unconfirmedError when the server warned that the commit's wait for the
// synchronous standbys was cut short (the pool's connections must report
// notices to [Notices]), when the statement succeeded only after ctx ended,
// when the connection failed during the statement (unless pgx knows it
// sent nothing), or when the answer was a connection exception or the end of
// the session (see outcomeUnknown). Any other error the server answered with
// means the transaction rolled back: returned as is.
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
	case errors.As(err, &pgErr) && outcomeUnknown(pgErr):
		return &unconfirmedError{reason: reasonNoAnswer, err: err}
	case err != nil && !errors.As(err, &pgErr) && pc.IsClosed() && (!pgconn.SafeToRetry(err) || errors.Is(err, pgconn.ErrConnClosed)):
		// The connection was open when acquired and failed during the
		// statement. pgx says "conn closed" (and safe to retry) when it
		// finds the connection closed under it, the statement sent or not:
		// only a failure it knows came before sending anything is safe.
		return &unconfirmedError{reason: reasonNoAnswer, err: err}
	}
	return err
}

// outcomeUnknown reports whether e, answered during the statement, leaves
// its transaction's outcome unknown rather than rolled back: a connection
// exception (class 08, such as the 08P01 "server conn crashed?" PgBouncer
// sends when the server connection dies under a statement), or the server
// ending the session (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
// cannot_connect_now). Either can arrive after the commit record is written
// locally, so the deliveries may be stored.
func outcomeUnknown(e *pgconn.PgError) bool {
	switch {
	case strings.HasPrefix(e.Code, "08"):
		return true
	case e.Code == "57P01", e.Code == "57P02", e.Code == "57P03":
		return true
	}
	return false
}

// countUnconfirmed counts n deliveries in pginbox_ingest_commit_unconfirmed_total
// when err says their commit went unconfirmed.
func countUnconfirmed(m *metrics.Set, err error, n int) {
	if reason := unconfirmedReason(err); reason != "" {
		m.IngestUnconfirmed.WithLabelValues(reason).Add(float64(n))
	}
}
