package runner

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

// EmbeddedDatabase is the database pginbox creates and uses on its embedded
// local cluster.
const EmbeddedDatabase = "pginbox"

// Database is a resolved database to connect to, possibly backed by an
// embedded cluster this process started.
type Database struct {
	// URL is the connection string.
	URL string
	// Cluster is the embedded cluster, or nil when DATABASE_URL was set.
	Cluster *localpg.Cluster
}

// Close stops the embedded cluster if this process started it.
func (d *Database) Close(ctx context.Context) error {
	if d.Cluster == nil {
		return nil
	}
	return d.Cluster.Stop(ctx)
}

// OpenDatabase resolves where pginbox's data lives: databaseURL when set,
// else an embedded cluster under dataDir (created on first use, reused after)
// with a database named [EmbeddedDatabase].
func OpenDatabase(ctx context.Context, databaseURL, dataDir string, log *slog.Logger) (*Database, error) {
	if databaseURL != "" {
		if _, err := pgx.ParseConfig(databaseURL); err != nil {
			return nil, fmt.Errorf("DATABASE_URL: %w", err)
		}
		return &Database{URL: databaseURL}, nil
	}
	if dataDir == "" {
		dataDir = ".pginbox"
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("embedded postgres: %w", err)
	}
	c, err := localpg.Start(ctx, localpg.Options{Dir: abs, Logger: log, Settings: map[string]string{
		"max_connections": "200",
	}})
	if err != nil {
		return nil, fmt.Errorf("embedded postgres (set DATABASE_URL to use your own): %w", err)
	}
	db := &Database{URL: c.URL(EmbeddedDatabase), Cluster: c}
	if err := createDatabase(ctx, c.URL("postgres"), EmbeddedDatabase); err != nil {
		_ = db.Close(ctx)
		return nil, err
	}
	return db, nil
}

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
