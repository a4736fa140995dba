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
// database named [Embedded].
func Open(ctx context.Context, databaseURL, dataDir string, log *slog.Logger) (*DB, error) {
	if databaseURL != "" {
		if _, err := pgx.ParseConfig(databaseURL); err != nil {
			return nil, ConnStringError("DATABASE_URL", databaseURL, err)
		}
		return &DB{URL: databaseURL}, nil
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
