package runner

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox"
)

// healthz answers 200 while the process is up.
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when the database is reachable, takes writes (not a
// standby, not read-only) and is migrated to at least the migrations this
// binary embeds, 503 otherwise.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := checkSchema(ctx, s.work, s.schemaVersion); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// schemaError says the database is reachable but not (fully) migrated.
type schemaError struct{ Have, Want int64 }

// Error says how far the schema is and what to run.
func (e *schemaError) Error() string {
	if e.Have == 0 {
		return "schema webhooks is not migrated (run pginbox migrate)"
	}
	return "schema webhooks is at version " + strconv.FormatInt(e.Have, 10) + ", this binary needs " + strconv.FormatInt(e.Want, 10) + " (run pginbox migrate)"
}

// errReadOnly says the server reached does not take writes.
var errReadOnly = errors.New("the database server does not take writes (a standby in recovery, or read-only)")

// checkSchema verifies the database answers, takes writes and carries every
// migration up to version want.
func checkSchema(ctx context.Context, pool *pgxpool.Pool, want int64) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var readOnly bool
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::boolean`).Scan(&readOnly); err != nil {
		return err
	}
	if readOnly {
		// Drop the connection, so the next check connects again — to the
		// server that takes writes, when the URL lists several.
		_ = conn.Conn().Close(ctx)
		return errReadOnly
	}
	have, err := pginbox.AppliedVersion(ctx, conn)
	if err != nil {
		return err
	}
	if have < want {
		return &schemaError{Have: have, Want: want}
	}
	return nil
}

// latestVersion returns the version of the newest embedded migration
// ([pginbox.LatestVersion]).
func latestVersion() (int64, error) {
	return pginbox.LatestVersion()
}
