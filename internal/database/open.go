// Package database resolves where pginbox's data lives for the CLI: the
// server DATABASE_URL names, or else an embedded cluster under a data
// folder, started on first use (see internal/localpg).
package database

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/pginbox/pginbox/internal/localpg"
)

// Embedded is the database pginbox creates and uses on its embedded local
// cluster.
const Embedded = "pginbox"

// DB is a resolved database to connect to, possibly backed by an embedded
// cluster this process started.
type DB struct {
	// URL is the connection string.
	URL string
	// Cluster is the embedded cluster, or nil when DATABASE_URL was set.
	Cluster *localpg.Cluster
}

// Close stops the embedded cluster if this process started it.
func (d *DB) Close(ctx context.Context) error {
	if d.Cluster == nil {
		return nil
	}
	return d.Cluster.Stop(ctx)
}

// Open resolves where pginbox's data lives: databaseURL when set, else an
// embedded cluster under dataDir (created on first use, reused after) with a
// database named [Embedded]. Only the commands that set pginbox up (serve,
// migrate) call it; the others call [OpenExisting].
func Open(ctx context.Context, databaseURL, dataDir string, log *slog.Logger) (*DB, error) {
	return open(ctx, databaseURL, dataDir, log, true)
}

// OpenExisting is [Open] that never creates a cluster: without databaseURL
// it starts the embedded cluster under dataDir if one was initialised there
// (a stopped one is started, as Open does), else it returns a
// [*NoClusterError] and leaves the folder untouched.
func OpenExisting(ctx context.Context, databaseURL, dataDir string, log *slog.Logger) (*DB, error) {
	return open(ctx, databaseURL, dataDir, log, false)
}

// DefaultDataDir is the embedded cluster's folder when PGINBOX_DATA_DIR is
// unset, relative to the working directory.
const DefaultDataDir = ".pginbox"

// NoClusterError is a command that needs a database run with DATABASE_URL
// unset where no embedded cluster was ever created: it names the folder and
// how to point at a database.
type NoClusterError struct {
	// Dir is the absolute data folder that holds no cluster.
	Dir string
}

// Error is one line: the folder, then DATABASE_URL, --data-dir and
// `pginbox serve` as the ways out.
func (e *NoClusterError) Error() string {
	return fmt.Sprintf("no database: DATABASE_URL is unset and no embedded cluster was created in %s (PGINBOX_DATA_DIR); "+
		"set DATABASE_URL, point --data-dir at the folder where pginbox serve keeps its cluster, "+
		"or create one here with pginbox serve (make run) or pginbox migrate", e.Dir)
}

func open(ctx context.Context, databaseURL, dataDir string, log *slog.Logger, create bool) (*DB, error) {
	if databaseURL != "" {
		if _, err := pgx.ParseConfig(databaseURL); err != nil {
			return nil, ConnStringError("DATABASE_URL", databaseURL, err)
		}
		return &DB{URL: databaseURL}, nil
	}
	if dataDir == "" {
		dataDir = DefaultDataDir
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("embedded postgres: %w", err)
	}
	if !create && !localpg.Exists(abs) {
		return nil, &NoClusterError{Dir: abs}
	}
	c, err := localpg.Start(ctx, localpg.Options{Dir: abs, Logger: log, Settings: map[string]string{
		"max_connections": "200",
	}})
	if err != nil {
		return nil, fmt.Errorf("embedded postgres (set DATABASE_URL to use your own): %w", err)
	}
	db := &DB{URL: c.URL(Embedded), Cluster: c}
	if err := createDatabase(ctx, c.URL("postgres"), Embedded); err != nil {
		_ = db.Close(ctx)
		return nil, err
	}
	return db, nil
}

// createDatabase creates the database name unless it exists.
func createDatabase(ctx context.Context, adminURL, name string) error {
	db, err := sql.Open("pgx", adminURL)
	if err != nil {
		return fmt.Errorf("embedded postgres: %w", err)
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("embedded postgres: %w", err)
	}
	if exists {
		return nil
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("embedded postgres: create database %s: %w", name, err)
	}
	return nil
}
