package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/localpg"
)

// pgEnv is the Postgres server the bench runs against: a cluster it started
// itself in a fresh temporary folder, or DATABASE_URL. Either way every
// scenario gets a scratch database of its own, cloned from a migrated
// template, and every scratch database is dropped at the end.
type pgEnv struct {
	adminURL string // a maintenance database on the server
	cluster  *localpg.Cluster
	dir      string // the temporary folder of our cluster
	external bool   // DATABASE_URL
	prefix   string // scratch database names start with it
	template string
	created  []string
	// pgss is true when pg_stat_statements can be used.
	pgss bool
}

// benchSettings are the postgresql.conf parameters of the bench's own
// cluster: durable (fsync and synchronous_commit stay on, as in production),
// with enough shared memory and WAL room that neither buffer eviction nor a
// checkpoint lands in the middle of a measurement.
func benchSettings(durable bool) map[string]string {
	s := map[string]string{
		"max_connections":          "300",
		"shared_buffers":           "1GB",
		"effective_cache_size":     "8GB",
		"maintenance_work_mem":     "512MB",
		"max_wal_size":             "16GB",
		"min_wal_size":             "1GB",
		"checkpoint_timeout":       "30min",
		"shared_preload_libraries": "pg_stat_statements",
		"pg_stat_statements.max":   "1000",
		"log_min_messages":         "warning",
		"log_min_error_statement":  "panic",
		"log_checkpoints":          "on",
		"autovacuum_naptime":       "10s",
		"track_wal_io_timing":      "on",
	}
	if !durable {
		s["fsync"] = "off"
		s["synchronous_commit"] = "off"
		s["full_page_writes"] = "off"
	}
	return s
}

func openEnv(ctx context.Context, durable bool, log *slog.Logger) (*pgEnv, error) {
	e := &pgEnv{prefix: fmt.Sprintf("pginbox_bench_%d_", os.Getpid())}
	if u := os.Getenv("DATABASE_URL"); u != "" {
		if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
			return nil, errors.New("DATABASE_URL must be a postgres:// URL (the bench creates scratch databases next to it)")
		}
		e.adminURL, e.external = u, true
	} else {
		dir, err := os.MkdirTemp("", "pginbox-bench-")
		if err != nil {
			return nil, err
		}
		e.dir = dir
		settings := benchSettings(durable)
		c, err := localpg.Start(ctx, localpg.Options{Dir: dir, Settings: settings, Logger: log})
		if err != nil && c == nil {
			// Without contrib there is no pg_stat_statements to preload:
			// start without it (the report then has no statement profile).
			delete(settings, "shared_preload_libraries")
			delete(settings, "pg_stat_statements.max")
			c, err = localpg.Start(ctx, localpg.Options{Dir: dir, Settings: settings, Logger: log})
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		e.cluster = c
		e.adminURL = c.URL("postgres")
	}
	return e, nil
}

// url returns the connection URL of database db on the server.
func (e *pgEnv) url(db string) string {
	u, err := url.Parse(e.adminURL)
	if err != nil {
		return e.adminURL
	}
	u.Path = "/" + db
	q := u.Query()
	if q.Get("sslmode") == "" && e.cluster != nil {
		q.Set("sslmode", "disable")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (e *pgEnv) adminExec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, e.adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// prepareTemplate creates the template database: migrated with
// pginbox.Migrate, plus the bench's own schema.
func (e *pgEnv) prepareTemplate(ctx context.Context) (time.Duration, error) {
	e.template = e.prefix + "tpl"
	if err := e.createDB(ctx, e.template, ""); err != nil {
		return 0, err
	}
	start := time.Now()
	pool, err := pgxpool.New(ctx, e.url(e.template))
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	err = pginbox.Migrate(ctx, db)
	_ = db.Close()
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	took := time.Since(start)
	if _, err := pool.Exec(ctx, benchSchema); err != nil {
		return 0, fmt.Errorf("bench schema: %w", err)
	}
	// Same storage parameters as the queue (LIKE does not copy them).
	var opts []string
	if err := pool.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = coalesce(to_regclass('webhooks.inbox'), 'webhooks.events'::regclass)`).Scan(&opts); err != nil {
		return 0, err
	}
	if len(opts) > 0 {
		if _, err := pool.Exec(ctx, `ALTER TABLE bench.raw SET (`+strings.Join(opts, ", ")+`)`); err != nil {
			return 0, fmt.Errorf("bench.raw storage parameters: %w", err)
		}
	}
	if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err == nil {
		var n int
		e.pgss = pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_statements`).Scan(&n) == nil
	}
	pool.Close()
	return took, nil
}

// benchSchema is created in the template: the plain-insert ceiling table,
// the side table the sql: handler logs into, and the handler itself. The
// ceiling is pinned to the one table of the layout before storage v2 (seed
// 000's webhooks.events): the queue's columns, keys and indexes plus the
// three indexes that moved to webhooks.keys (the unique key, the unique
// body digest, the sequence number). LIKE of the view webhooks.events would
// copy no index at all.
const benchSchema = `
CREATE SCHEMA bench;
DO $do$
BEGIN
    IF to_regclass('webhooks.inbox') IS NULL THEN
        -- A database migrated only up to a version before storage v2.
        CREATE TABLE bench.raw (LIKE webhooks.events INCLUDING ALL);
    ELSE
        CREATE TABLE bench.raw (LIKE webhooks.inbox INCLUDING ALL);
        IF to_regclass('webhooks.events_provider_external_id_key') IS NULL THEN
            ALTER TABLE bench.raw ADD CONSTRAINT raw_provider_external_id_key UNIQUE (provider, external_id);
            CREATE UNIQUE INDEX raw_provider_body_sha256_key ON bench.raw (provider, body_sha256) WHERE body_sha256 IS NOT NULL;
            CREATE INDEX raw_provider_seq_idx ON bench.raw (provider, seq) WHERE seq IS NOT NULL;
        END IF;
    END IF;
END
$do$;
-- Every run of the handler, with the time it started. No unique key on
-- purpose: a second run of an event must show up as a second row.
CREATE TABLE bench.handled (
    event_id   bigint      NOT NULL,
    at         timestamptz NOT NULL,
    claimed_at timestamptz
);
CREATE FUNCTION bench.on_event(e webhooks.events) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bench.handled (event_id, at, claimed_at) VALUES (e.id, clock_timestamp(), e.claimed_at);
END;
$$;
-- Keys the clients saw acknowledged, loaded for the audit's anti-joins.
CREATE TABLE bench.acked (scenario text NOT NULL, provider text NOT NULL, external_id text NOT NULL);
`

// createDB creates database name, cloned from template when set.
func (e *pgEnv) createDB(ctx context.Context, name, template string) error {
	q := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		q += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	var err error
	for try := 0; try < 20; try++ {
		// A template still in use by a closing connection makes CREATE
		// DATABASE fail for a moment: retry briefly.
		if err = e.adminExec(ctx, q); err == nil || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	e.created = append(e.created, name)
	return nil
}

// scratch creates a fresh migrated database for one scenario and returns
// its URL.
func (e *pgEnv) scratch(ctx context.Context, name string) (string, error) {
	db := e.prefix + name
	if err := e.createDB(ctx, db, e.template); err != nil {
		return "", err
	}
	return e.url(db), nil
}

// drop removes one scratch database.
func (e *pgEnv) drop(ctx context.Context, db string) {
	if err := e.adminExec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
		fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", db, err)
	}
}

// dropScratch drops a scenario's database (name as given to scratch).
func (e *pgEnv) dropScratch(ctx context.Context, name string) {
	db := e.prefix + name
	e.drop(ctx, db)
	for i, c := range e.created {
		if c == db {
			e.created = append(e.created[:i], e.created[i+1:]...)
			break
		}
	}
}

// close drops every scratch database and stops and removes our cluster.
func (e *pgEnv) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if e.cluster != nil {
		if err := e.cluster.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "bench: stop cluster: %v\n", err)
		}
		if e.dir != "" {
			_ = os.RemoveAll(e.dir)
		}
		return
	}
	for i := len(e.created) - 1; i >= 0; i-- {
		e.drop(ctx, e.created[i])
	}
}

// newPool opens a pool of exactly n connections, all established.
func newPool(ctx context.Context, dbURL string, n int, app string, params ...string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = int32(n)
	pc.MinConns = int32(n)
	pc.ConnConfig.RuntimeParams["application_name"] = app
	for i := 0; i+1 < len(params); i += 2 {
		pc.ConnConfig.RuntimeParams[params[i]] = params[i+1]
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	// Establish every connection now, not during a measurement.
	conns := make([]*pgxpool.Conn, 0, n)
	for i := 0; i < n; i++ {
		c, err := pool.Acquire(ctx)
		if err != nil {
			for _, c := range conns {
				c.Release()
			}
			pool.Close()
			return nil, err
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	return pool, nil
}

// walPos is the server's WAL insert position and next transaction id: their
// differences across a measurement are the WAL bytes written and the
// transaction ids assigned (every writing transaction needs one and, with
// synchronous_commit on, a WAL flush at commit).
type walPos struct {
	lsn  int64
	xid  int64
	when time.Time
}

func readWalPos(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) walPos {
	var p walPos
	_ = q.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn, pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&p.lsn, &p.xid)
	p.when = time.Now()
	return p
}

// walSync is pg_stat_wal's count and time of WAL flushes (the time needs
// track_wal_io_timing, on in the bench's own cluster).
type walSync struct {
	Syncs  int64
	SyncMS float64
}

func readWalSync(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) walSync {
	var w walSync
	_ = q.QueryRow(ctx, `SELECT wal_sync, wal_sync_time FROM pg_stat_wal`).Scan(&w.Syncs, &w.SyncMS)
	return w
}

// pgssReset clears pg_stat_statements (when available).
func pgssReset(ctx context.Context, env *pgEnv, pool *pgxpool.Pool) {
	if env.pgss {
		_, _ = pool.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	}
}

// stmtStat is one pg_stat_statements row.
type stmtStat struct {
	Query   string  `json:"query"`
	Calls   int64   `json:"calls"`
	TotalMS float64 `json:"total_ms"`
	MeanMS  float64 `json:"mean_ms"`
	Rows    int64   `json:"rows"`
	WALByte int64   `json:"wal_bytes"`
	// Per call: shared buffers hit, read (missed shared_buffers), dirtied,
	// and WAL full-page images.
	HitPer   float64 `json:"shared_hit_per_call"`
	ReadPer  float64 `json:"shared_read_per_call"`
	DirtyPer float64 `json:"shared_dirtied_per_call"`
	FPIPer   float64 `json:"wal_fpi_per_call"`
}

const pgssCols = `regexp_replace(query, '\s+', ' ', 'g'), calls, total_exec_time, mean_exec_time, rows, wal_bytes::bigint,
	shared_blks_hit::float8 / greatest(calls, 1), shared_blks_read::float8 / greatest(calls, 1),
	shared_blks_dirtied::float8 / greatest(calls, 1), wal_fpi::float8 / greatest(calls, 1)`

func scanStmt(r pgx.CollectableRow) (stmtStat, error) {
	var s stmtStat
	err := r.Scan(&s.Query, &s.Calls, &s.TotalMS, &s.MeanMS, &s.Rows, &s.WALByte, &s.HitPer, &s.ReadPer, &s.DirtyPer, &s.FPIPer)
	if len(s.Query) > 160 {
		s.Query = s.Query[:157] + "..."
	}
	s.TotalMS, s.MeanMS = round1(s.TotalMS), round3(s.MeanMS)
	s.HitPer, s.ReadPer, s.DirtyPer, s.FPIPer = round1(s.HitPer), round1(s.ReadPer), round1(s.DirtyPer), round3(s.FPIPer)
	return s, err
}

// pgssTop returns the statements of the current database by total time.
func pgssTop(ctx context.Context, env *pgEnv, pool *pgxpool.Pool, n int) []stmtStat {
	return pgssQuery(ctx, env, pool, `query !~* 'pg_stat_statements'
		  AND query !~ 'bench\.acked|"acked"|^ANALYZE|^TRUNCATE|count\(\*\)|pg_backend_pid|pg_current_wal'
		ORDER BY total_exec_time DESC LIMIT $1`, n)
}

// pgssMatch returns the statements whose text matches the regular
// expression re.
func pgssMatch(ctx context.Context, env *pgEnv, pool *pgxpool.Pool, re string) []stmtStat {
	return pgssQuery(ctx, env, pool, `query ~ $1 ORDER BY total_exec_time DESC`, re)
}

// pgssQuery reads pg_stat_statements for the current database, narrowed
// and ordered by rest (what follows "AND"); nil when it is not available.
func pgssQuery(ctx context.Context, env *pgEnv, pool *pgxpool.Pool, rest string, args ...any) []stmtStat {
	if !env.pgss {
		return nil
	}
	rows, err := pool.Query(ctx, `SELECT `+pgssCols+` FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND `+rest, args...)
	if err != nil {
		return nil
	}
	out, err := pgx.CollectRows(rows, scanStmt)
	if err != nil {
		return nil
	}
	return out
}
