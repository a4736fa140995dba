// Package pginbox is a Postgres-native inbox for third-party webhooks.
//
// The logic lives in SQL: versioned plpgsql functions, tables and views in the
// schema webhooks, shipped as goose migrations under sql/. This package embeds
// them, flattens the four folders into one goose namespace and applies them
// with [Migrate]. The Go runner (package runner) is an optional sidecar.
package pginbox

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// The migrations only: sql/schema.sql (the reference dump) and
// sql/released.sha256 stay out of the binary.
//
//go:embed sql/schema/*.sql sql/functions/*.sql sql/views/*.sql sql/checks/*.sql
var embedded embed.FS

// VersionTable is the goose version table pginbox migrates with. It lives in
// the schema webhooks, so pginbox never shares (or collides with) the
// application's own goose_db_version table.
const VersionTable = "webhooks.goose_db_version"

// MigrationLockID is the Postgres advisory lock key that serialises concurrent
// migrators of the same database (goose session locker).
const MigrationLockID int64 = 0x7067696e626f78 // "pginbox"

// migrationName matches a migration file: 5-digit version, then a name.
var migrationName = regexp.MustCompile(`^([0-9]{5})_[a-z0-9_]+\.sql$`)

// sqlDirs are the folders that hold migrations, in one version sequence.
var sqlDirs = []string{"sql/schema", "sql/functions", "sql/views", "sql/checks"}

// Migrations returns the embedded migrations flattened into a single
// directory, as goose expects: every file of sql/schema, sql/functions,
// sql/views and sql/checks at the root, by file name. It fails when two files
// share a name or a version number, or a file is misnamed.
func Migrations() (fs.FS, error) {
	return flatten(embedded, sqlDirs)
}

func flatten(src fs.FS, dirs []string) (fs.FS, error) {
	out := fstest.MapFS{}
	versions := map[int64]string{}
	for _, dir := range dirs {
		entries, err := fs.ReadDir(src, dir)
		if err != nil {
			return nil, fmt.Errorf("migrations: read %s: %w", dir, err)
		}
		for _, e := range entries {
			if e.IsDir() || path.Ext(e.Name()) != ".sql" {
				continue
			}
			full := path.Join(dir, e.Name())
			m := migrationName.FindStringSubmatch(e.Name())
			if m == nil {
				return nil, fmt.Errorf("migrations: %s: name must be NNNNN_verb_object.sql", full)
			}
			v, _ := strconv.ParseInt(m[1], 10, 64)
			if prev, ok := versions[v]; ok {
				return nil, fmt.Errorf("migrations: %s and %s share version %d", prev, full, v)
			}
			versions[v] = full
			data, err := fs.ReadFile(src, full)
			if err != nil {
				return nil, fmt.Errorf("migrations: read %s: %w", full, err)
			}
			out[e.Name()] = &fstest.MapFile{Data: data, Mode: 0o444}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("migrations: no .sql files under %v", dirs)
	}
	return out, nil
}

// MigrationFiles returns the flattened migration file names in version order.
func MigrationFiles() ([]string, error) {
	fsys, err := Migrations()
	if err != nil {
		return nil, err
	}
	return migrationFiles(fsys)
}

// migrationFiles returns the names of the migrations at the root of a
// flattened fsys, in version order.
func migrationFiles(fsys fs.FS) ([]string, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	sort.Strings(names)
	return names, nil
}

// latest is the newest embedded version, computed once: the embedded files
// cannot change while the program runs.
var latest = sync.OnceValues(func() (int64, error) {
	names, err := MigrationFiles()
	if err != nil {
		return 0, err
	}
	return versionOf(names[len(names)-1])
})

// versionOf returns the version of a migration file name (NNNNN_....sql).
func versionOf(name string) (int64, error) {
	m := migrationName.FindStringSubmatch(name)
	if m == nil {
		return 0, fmt.Errorf("migrations: %s: name must be NNNNN_verb_object.sql", name)
	}
	return strconv.ParseInt(m[1], 10, 64)
}

// LatestVersion returns the version of the newest migration this binary
// embeds: the schema version a database needs to serve this binary.
func LatestVersion() (int64, error) {
	return latest()
}

// RowQuerier is what [AppliedVersion] reads with: a *pgxpool.Pool, *pgx.Conn
// or pgx.Tx.
type RowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// AppliedVersion returns the newest migration applied to the database q
// reads: from [VersionTable], or, for a schema the stock goose CLI migrated
// without GOOSE_TABLE, from goose's default table goose_db_version when it
// records pginbox's migrations (see goosedefault.go; [Migrate] then adopts
// those rows). It is 0 when none is applied, or the database was never
// migrated. Once [VersionTable] is at the newest embedded version, nothing
// else is read. A goose_db_version that is not goose's (another shape, or
// not readable) is left unread: it never makes AppliedVersion fail.
func AppliedVersion(ctx context.Context, q RowQuerier) (int64, error) {
	query := func(ctx context.Context, sql string, args ...any) interface{ Scan(...any) error } {
		return q.QueryRow(ctx, sql, args...)
	}
	exists, v, err := ownVersion(ctx, query)
	if err != nil {
		return 0, err
	}
	if newest, err := LatestVersion(); err == nil && v >= newest {
		return v, nil
	}
	_, adopted, err := adoptable(ctx, query, exists, v)
	var na *notAdoptableError
	if errors.As(err, &na) {
		logNotAdoptable(ctx, na)
		return v, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return max(v, adopted), nil
}

// NewMigrationProvider returns a goose provider for the pginbox migrations
// on db, using the version table [VersionTable] and a Postgres session locker
// so two migrators of the same database cannot race. It uses no global goose
// state. (A goose provider applies migrations; it has nothing to do with the
// webhook providers of package runner.)
func NewMigrationProvider(db *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	fsys, err := Migrations()
	if err != nil {
		return nil, err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(MigrationLockID))
	if err != nil {
		return nil, fmt.Errorf("migrations: locker: %w", err)
	}
	base := []goose.ProviderOption{
		goose.WithTableName(VersionTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("migrations: provider: %w", err)
	}
	return p, nil
}

// Migrate applies every pending pginbox migration to db. Migrating an
// up-to-date database is a no-op, and nothing outside the schema webhooks is
// created or changed. Concurrent calls against one database are serialised.
// A schema the stock goose CLI migrated with its default version table
// (goose_db_version, not [VersionTable]) is recognised: the versions that
// table records for pginbox are first copied into [VersionTable] (the
// default table is left as it is), then only what is still pending runs.
func Migrate(ctx context.Context, db *sql.DB) error {
	if err := ensureSchema(ctx, db); err != nil {
		return err
	}
	p, err := NewMigrationProvider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// ensureSchema creates the schema webhooks, which must exist before goose
// creates its version table in it, or, when it exists, adopts the versions
// the goose CLI's default table records for it (adoptDefaultTable).
// Concurrent CREATE SCHEMA IF NOT EXISTS can still collide on the catalog's
// unique index, so it runs under the same advisory lock the migrators use.
func ensureSchema(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // rollback after commit is a no-op
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, MigrationLockID); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	// Look before creating: CREATE SCHEMA checks the CREATE privilege on the
	// database even when the schema exists, which a migrator that does not own
	// the database may lack.
	var exists bool
	if err := tx.QueryRowContext(ctx,
		`SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = 'webhooks')`).Scan(&exists); err != nil {
		return fmt.Errorf("migrate: look up schema webhooks: %w", err)
	}
	if !exists {
		if _, err := tx.ExecContext(ctx, `CREATE SCHEMA webhooks`); err != nil {
			return fmt.Errorf("migrate: create schema webhooks: %w", err)
		}
	} else if _, err := adoptDefaultTable(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

// WriteMigrations writes the flattened migrations into dir (created if
// missing), so the stock goose CLI can apply them:
//
//	psql "$DATABASE_URL" -c 'CREATE SCHEMA IF NOT EXISTS webhooks'
//	GOOSE_TABLE=webhooks.goose_db_version goose -dir dir postgres "$DATABASE_URL" up
func WriteMigrations(dir string) error {
	fsys, err := Migrations()
	if err != nil {
		return err
	}
	names, err := migrationFiles(fsys)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write migrations: %w", err)
	}
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return fmt.Errorf("write migrations: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			return fmt.Errorf("write migrations: %w", err)
		}
	}
	return nil
}
