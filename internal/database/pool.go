package database

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultExecMode is how pginbox's connections send statements unless the
// URL says otherwise (default_query_exec_mode=...) or the connection is
// known to be direct: the extended protocol with the unnamed statement,
// parsed again on every call, and the statement's description cached on
// the client. One round trip, like pgx's default (named server-side
// prepared statements), but nothing is left on the server connection
// between transactions, so it works unchanged through a transaction pooler
// (PgBouncer before 1.21, or without max_prepared_statements), where a
// named statement prepared on one server connection is missing on the next
// (26000) or already there (42P05). `pginbox serve` probes the URL at start
// (see [TransactionPooled]) and uses named statements on a direct
// connection, which the bench measured faster.
const DefaultExecMode = pgx.QueryExecModeCacheDescribe

// PoolConfig parses databaseURL into a pool configuration for pginbox:
// application_name app, the exec mode [DefaultExecMode] unless the URL sets
// one, connections dropped on an error that says the server no longer
// takes writes (see [DropOnReadOnly]), and a cancelled context cancelling
// the statement rather than closing the connection.
func PoolConfig(databaseURL, app string) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, ConnStringError("database url", databaseURL, err)
	}
	configureConn(pc.ConnConfig, databaseURL, app)
	return pc, nil
}

// ConnConfig is [PoolConfig] for a single connection.
func ConnConfig(databaseURL, app string) (*pgx.ConnConfig, error) {
	cc, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, ConnStringError("database url", databaseURL, err)
	}
	configureConn(cc, databaseURL, app)
	return cc, nil
}

func configureConn(cc *pgx.ConnConfig, databaseURL, app string) {
	if app != "" {
		cc.RuntimeParams["application_name"] = app
	}
	if !SetsExecMode(databaseURL) {
		cc.DefaultQueryExecMode = DefaultExecMode
	}
	DropOnReadOnly(&cc.Config)
	cc.BuildContextWatcherHandler = newCancelHandler
}

// SetsExecMode reports whether the connection string chooses pgx's exec
// mode itself (URL query or key=value form).
func SetsExecMode(databaseURL string) bool {
	if u, err := url.Parse(databaseURL); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		return u.Query().Has("default_query_exec_mode")
	}
	return strings.Contains(databaseURL, "default_query_exec_mode")
}

// DropOnReadOnly makes a connection close itself on SQLSTATE 25006
// (read_only_sql_transaction): the server it reached no longer takes writes
// (a primary demoted to a standby, a server switched read-only), so the
// pool opens a new connection next time — with several hosts and
// target_session_attrs=read-write, to the server that does — instead of
// failing on this one forever. FATAL errors still close it, as by default.
func DropOnReadOnly(c *pgconn.Config) {
	prev := c.OnPgError
	c.OnPgError = func(pc *pgconn.PgConn, pgErr *pgconn.PgError) bool {
		if pgErr.Code == "25006" {
			return false
		}
		if prev != nil {
			return prev(pc, pgErr)
		}
		return !strings.EqualFold(pgErr.Severity, "FATAL")
	}
}

// ErrTransactionPooler says a session-level operation (a migration's
// session lock, LISTEN) was asked of a connection that goes through a
// transaction pooler.
var ErrTransactionPooler = errors.New("DATABASE_URL goes through a transaction pooler (e.g. PgBouncer pool_mode=transaction)")

// TransactionPooled reports whether databaseURL reaches Postgres through a
// pooler that hands server connections out per transaction (PgBouncer,
// pgcat, Supavisor in transaction mode), where session state — a session
// advisory lock, LISTEN, SET — does not stay with the client connection.
//
// It watches whether a server connection follows its client: client A asks
// its backend's pid; client B opens a transaction and asks its own. On a
// direct connection or a session pooler the two differ and A keeps its
// backend; through a transaction pooler B is handed A's idle backend (the
// pooler reuses the most recently released one) or A's next statement
// lands on another. It never reports a direct connection as pooled.
func TransactionPooled(ctx context.Context, databaseURL string) (bool, error) {
	cc, err := ConnConfig(databaseURL, "pginbox-probe")
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	a, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer a.Close(context.Background())
	b, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer b.Close(context.Background())
	var pidA, pidB, pidA2 int32
	if err := a.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pidA); err != nil {
		return false, fmt.Errorf("probe: %w", err)
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("probe: %w", err)
	}
	defer tx.Rollback(context.Background())
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pidB); err != nil {
		return false, fmt.Errorf("probe: %w", err)
	}
	if pidB == pidA {
		return true, nil
	}
	// A pooler with a single server connection makes A wait for B's
	// transaction: a direct connection answers at once. A busy pooler may
	// hand A its own backend back by chance, so A asks a few times: on a
	// direct connection its pid never changes, so more rounds can only
	// find a pooler, never invent one.
	for range probeRounds {
		actx, acancel := context.WithTimeout(ctx, 3*time.Second)
		err := a.QueryRow(actx, `SELECT pg_backend_pid()`).Scan(&pidA2)
		timedOut := actx.Err() != nil
		acancel()
		if err != nil {
			if timedOut && ctx.Err() == nil {
				return true, nil
			}
			return false, fmt.Errorf("probe: %w", err)
		}
		if pidA2 != pidA {
			return true, nil
		}
	}
	return false, nil
}

// probeRounds is how many times TransactionPooled's first client asks for
// its backend while the second holds a transaction open.
const probeRounds = 5
