package tests

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// The harness lives in internal/pgtest (nothing outside the module may
// import what it pulls in); these names let the integration tests call it
// unqualified.
var (
	Server       = pgtest.Server
	StartCluster = pgtest.StartCluster
	NewConfig    = pgtest.NewConfig
	NewDB        = pgtest.NewDB
	NewPool      = pgtest.NewPool
	PoolFor      = pgtest.PoolFor
	SuperuserURL = pgtest.SuperuserURL
)

// ingest calls webhooks.ingest_webhook and returns its row.
func ingest(t testing.TB, pool *pgxpool.Pool, provider, externalID, eventType, payload string) (int64, string) {
	t.Helper()
	var id int64
	var outcome string
	err := pool.QueryRow(context.Background(),
		`SELECT event_id, outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb)`,
		provider, externalID, eventType, payload).Scan(&id, &outcome)
	if err != nil {
		t.Fatalf("ingest %s/%s: %v", provider, externalID, err)
	}
	return id, outcome
}

// queryInt runs a query returning one integer.
func queryInt(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// execSQL runs a statement.
func execSQL(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// claimed is one row handed out by webhooks.claim.
type claimed struct {
	ID       int64
	Attempts int32
}

// claim calls webhooks.claim for worker.
func claim(t testing.TB, pool *pgxpool.Pool, worker string, max int, lease string) []claimed {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT id, attempts FROM webhooks.claim($1, $2, $3::interval) ORDER BY id`, worker, max, lease)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	defer rows.Close()
	var out []claimed
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.ID, &c.Attempts); err != nil {
			t.Fatalf("claim scan: %v", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("claim: %v", err)
	}
	return out
}

// wantPgError fails t unless err is a Postgres error with SQLSTATE code whose
// message contains substr.
func wantPgError(t testing.TB, err error, code, substr string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("want Postgres error %s (%q), got %v", code, substr, err)
	}
	if pgErr.Code != code || !strings.Contains(pgErr.Message, substr) {
		t.Fatalf("want error %s containing %q, got %s: %s", code, substr, pgErr.Code, pgErr.Message)
	}
}

// stringsReader is strings.NewReader as an io.Reader.
func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// nowFunc is time.Now, named for tests that sign deliveries.
var nowFunc = time.Now
