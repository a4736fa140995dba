// Package pgtest is the integration harness: every test runs against a real
// PostgreSQL server and gets a fresh, migrated database of its own.
//
// The server comes from, in order: PGTESTDB_HOST/PGTESTDB_PORT/PGTESTDB_USER/
// PGTESTDB_PASSWORD; DATABASE_URL; else a throwaway cluster started once per
// test binary from the local Postgres binaries (see internal/localpg), stopped
// by [Main]. `make test` starts one cluster for the whole run and exports the
// PGTESTDB_* variables, so every package shares it. Databases are cloned from
// a migrated template by pgtestdb.
package pgtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/peterldowns/pgtestdb"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/localpg"
)

var (
	serverOnce sync.Once
	server     pgtestdb.Config
	serverErr  error
	throwaway  *Throwaway
)

// Main runs the tests of a package, then the cleanups, and stops the
// throwaway cluster, if this binary started one. Call it from TestMain:
// func TestMain(m *testing.M) { pgtest.Main(m) }.
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if throwaway != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := throwaway.Stop(ctx); err != nil {
			log.Printf("pgtest: stop throwaway server: %v", err)
		}
		cancel()
	}
	os.Exit(code)
}

// Server returns the Postgres server the tests use, starting a throwaway
// cluster on first use when none is configured.
func Server(t testing.TB) pgtestdb.Config {
	t.Helper()
	serverOnce.Do(func() { server, serverErr = findServer() })
	if serverErr != nil {
		t.Fatalf("pgtest: no Postgres server: %v", serverErr)
	}
	return server
}

func findServer() (pgtestdb.Config, error) {
	conf := pgtestdb.Config{DriverName: "pgx", Database: "postgres", Options: "sslmode=disable"}
	if host := os.Getenv("PGTESTDB_HOST"); host != "" {
		conf.Host = host
		conf.Port = envOr("PGTESTDB_PORT", "5432")
		conf.User = envOr("PGTESTDB_USER", "postgres")
		conf.Password = os.Getenv("PGTESTDB_PASSWORD")
		return conf, nil
	}
	if dsn := os.Getenv("DATABASE_URL"); dsn != "" {
		pc, err := pgx.ParseConfig(dsn)
		if err != nil {
			return conf, fmt.Errorf("DATABASE_URL: %w", err)
		}
		conf.Host, conf.Port = pc.Host, strconv.Itoa(int(pc.Port))
		conf.User, conf.Password = pc.User, pc.Password
		if pc.Database != "" {
			conf.Database = pc.Database
		}
		return conf, nil
	}
	s, err := StartThrowaway(context.Background())
	if err != nil {
		return conf, err
	}
	throwaway = s
	conf.Host, conf.Port, conf.User, conf.Password = s.Host, strconv.Itoa(s.Port), s.User, s.Password
	return conf, nil
}

// StartCluster starts a throwaway cluster with test-friendly settings in a
// new temporary folder, from the local binaries. Tests that stop and restart
// the server use it directly.
func StartCluster(ctx context.Context) (*localpg.Cluster, error) {
	return StartClusterWith(ctx, nil)
}

// StartClusterWith is [StartCluster] with settings over the test settings
// (e.g. a server default under test).
func StartClusterWith(ctx context.Context, settings map[string]string) (*localpg.Cluster, error) {
	all := map[string]string{}
	for k, v := range localpg.TestSettings {
		all[k] = v
	}
	for k, v := range settings {
		all[k] = v
	}
	dir, err := os.MkdirTemp("", "pginbox-test-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	// PGINBOX_PG_BINDIR picks another server version (make test-matrix).
	// Trust: a throwaway cluster in a fresh temporary folder, for tests only.
	c, err := localpg.Start(ctx, localpg.Options{Dir: dir, Settings: all, BinDir: os.Getenv("PGINBOX_PG_BINDIR"), Trust: true})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// Migrator is the pgtestdb migrator for pginbox: it migrates each template
// database with [pginbox.Migrate], the same path users take, and hashes the
// embedded migrations so a changed migration gets a new template.
type Migrator struct{}

var _ pgtestdb.Migrator = Migrator{}

// Hash identifies the migrated schema by the names and contents of the
// flattened migration files.
func (Migrator) Hash() (string, error) {
	fsys, err := pginbox.Migrations()
	if err != nil {
		return "", err
	}
	names, err := pginbox.MigrationFiles()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Migrate applies the pginbox migrations to a new template database.
func (Migrator) Migrate(ctx context.Context, db *sql.DB, _ pgtestdb.Config) error {
	return pginbox.Migrate(ctx, db)
}

// NewConfig creates a fresh migrated database for t, dropped when t passes,
// and returns how to connect to it (as a non-superuser role).
func NewConfig(t testing.TB) *pgtestdb.Config {
	t.Helper()
	return pgtestdb.Custom(t, Server(t), Migrator{})
}

// NewDB returns a *sql.DB (pgx driver) on a fresh migrated database.
func NewDB(t testing.TB) *sql.DB {
	t.Helper()
	conf := NewConfig(t)
	db, err := sql.Open("pgx", conf.URL())
	if err != nil {
		t.Fatalf("pgtest: open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// NewPool returns a pgx pool on a fresh migrated database, with room for
// maxConns connections (0 means 40).
func NewPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	return PoolFor(t, NewConfig(t).URL(), maxConns)
}

// PoolFor opens a pgx pool on url, closed when t ends.
func PoolFor(t testing.TB, url string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", url, err)
	}
	if maxConns == 0 {
		maxConns = 40
	}
	pc.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// SuperuserURL returns a URL for database db on the test server as the
// server's own (super)user, for tests that need to look behind pgtestdb's
// restricted role.
func SuperuserURL(t testing.TB, db string) string {
	t.Helper()
	s := Server(t)
	u := url.URL{Scheme: "postgres", Host: s.Host + ":" + s.Port, Path: "/" + db, RawQuery: "sslmode=disable"}
	if s.Password != "" {
		u.User = url.UserPassword(s.User, s.Password)
	} else {
		u.User = url.User(s.User)
	}
	return u.String()
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// EmptyDatabase creates an empty database with a unique name on the test
// server, owned by the server's own user, and returns its URL and a function
// that drops it. It serves runnable examples, which have no testing.T:
// call it from TestMain.
func EmptyDatabase(ctx context.Context, prefix string) (string, func(), error) {
	serverOnce.Do(func() { server, serverErr = findServer() })
	if serverErr != nil {
		return "", nil, fmt.Errorf("pgtest: no Postgres server: %w", serverErr)
	}
	u := url.URL{Scheme: "postgres", Host: server.Host + ":" + server.Port, RawQuery: "sslmode=disable"}
	if server.Password != "" {
		u.User = url.UserPassword(server.User, server.Password)
	} else {
		u.User = url.User(server.User)
	}
	admin := u
	admin.Path = "/" + server.Database
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return "", nil, fmt.Errorf("pgtest: %w", err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, admin.String()); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			c.Close(ctx)
		}
	}
	return u.String(), drop, nil
}
