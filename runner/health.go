package runner

import (
	"context"
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

// readyz answers 200 when the database is reachable and migrated to at
// least the migrations this binary embeds, 503 otherwise.
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

// checkSchema verifies the database answers and carries every migration up
// to version want.
func checkSchema(ctx context.Context, pool *pgxpool.Pool, want int64) error {
	have, err := pginbox.AppliedVersion(ctx, pool)
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
