// Package cli implements the pginbox command line: one function per
// subcommand, each returning an error that main prints as one line.
package cli

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/runner"
)

// Version is set at build time with -ldflags "-X github.com/pginbox/pginbox/runner/cli.Version=...".
var Version = ""

// Env is how a command reads its environment (os.Getenv in production).
type Env func(string) string

// App carries what every subcommand needs.
type App struct {
	Stdout, Stderr io.Writer
	Getenv         Env
	Log            *slog.Logger
}

// ErrUsage marks a command line that could not be understood.
var ErrUsage = errors.New("usage")

const usage = `usage: pginbox <command> [flags]

commands:
  migrate            apply the SQL migrations to DATABASE_URL (or the embedded cluster)
  serve              run the webhook endpoint, workers and schedules (flags mirror PGINBOX_*: --addr, --handler ...)
  reconcile [--all]  run one reconciliation pass and print its counts as JSON
  gaps [--provider P] [--json] [--limit N] [--backfill]
                     list expected events that did not arrive; --backfill asks the
                     providers' APIs (PGINBOX_API_URL_<NAME>, PGINBOX_API_KEY_<NAME>)
  checks [--json]    refresh the views, run every anomaly check once; exit 1 on a breach
  replay ID --reason R  put event ID back to pending on purpose (audited)
  prune              drop old payloads (PGINBOX_KEEP_PAYLOAD, 30d) and keys (PGINBOX_KEEP_KEYS, 400d)
  version            print the binary and schema versions
  sql-dist DIR       write the flattened migrations to DIR for the stock goose CLI

environment: DATABASE_URL (unset: embedded cluster under PGINBOX_DATA_DIR, default .pginbox)
`

// Run executes one command line (without the program name) and returns the
// process exit code. Errors are printed as one line on Stderr.
func Run(ctx context.Context, app App, args []string) int {
	if app.Getenv == nil {
		app.Getenv = os.Getenv
	}
	if app.Log == nil {
		app.Log = slog.New(slog.NewJSONHandler(app.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	err := dispatch(ctx, app, args)
	if err == nil {
		return 0
	}
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintf(app.Stderr, "pginbox: %s\n", msg)
	if errors.Is(err, ErrUsage) {
		fmt.Fprint(app.Stderr, usage)
		return 2
	}
	return 1
}

func dispatch(ctx context.Context, app App, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", ErrUsage)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "migrate":
		return migrate(ctx, app, rest)
	case "serve":
		return serve(ctx, app, rest)
	case "reconcile":
		return reconcileCmd(ctx, app, rest)
	case "gaps":
		return gapsCmd(ctx, app, rest)
	case "checks":
		return checksCmd(ctx, app, rest)
	case "replay":
		return replayCmd(ctx, app, rest)
	case "prune":
		return pruneCmd(ctx, app, rest)
	case "version", "--version", "-v":
		return version(ctx, app, rest)
	case "sql-dist":
		return sqlDist(app, rest)
	case "help", "-h", "--help":
		fmt.Fprint(app.Stdout, usage)
		return nil
	default:
		return fmt.Errorf("%w: unknown command %q", ErrUsage, cmd)
	}
}

func newFlags(name string, app App) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors come back to Run, printed as one line
	return fs
}

// openDB resolves DATABASE_URL or the embedded cluster and opens it.
func openDB(ctx context.Context, app App) (*sql.DB, func(), error) {
	d, err := runner.OpenDatabase(ctx, app.Getenv("DATABASE_URL"), dataDir(app), app.Log)
	if err != nil {
		return nil, nil, err
	}
	db, err := sql.Open("pgx", d.URL)
	if err != nil {
		_ = d.Close(ctx)
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	return db, func() { db.Close(); _ = d.Close(context.Background()) }, nil
}

func dataDir(app App) string {
	if d := app.Getenv("PGINBOX_DATA_DIR"); d != "" {
		return d
	}
	return ".pginbox"
}

func migrate(ctx context.Context, app App, args []string) error {
	fs := newFlags("migrate", app)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	db, closeDB, err := openDB(ctx, app)
	if err != nil {
		return err
	}
	defer closeDB()
	before, _ := schemaVersion(ctx, db)
	if err := pginbox.Migrate(ctx, db); err != nil {
		return err
	}
	after, err := schemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if after == before {
		fmt.Fprintf(app.Stdout, "schema webhooks is up to date (version %05d)\n", after)
	} else {
		fmt.Fprintf(app.Stdout, "migrated schema webhooks from version %05d to %05d\n", before, after)
	}
	return nil
}

// schemaVersion returns the newest applied migration (0 for none).
func schemaVersion(ctx context.Context, db *sql.DB) (int64, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT max(version_id) FROM `+pginbox.VersionTable+` WHERE is_applied`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v.Int64, nil
}

func version(ctx context.Context, app App, args []string) error {
	fs := newFlags("version", app)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	names, err := pginbox.MigrationFiles()
	if err != nil {
		return err
	}
	latest := strings.SplitN(names[len(names)-1], "_", 2)[0]
	fmt.Fprintf(app.Stdout, "pginbox %s (%s), embedded migrations: %d (latest %s)\n",
		binaryVersion(), runtime.Version(), len(names), latest)
	if url := app.Getenv("DATABASE_URL"); url != "" {
		db, err := sql.Open("pgx", url)
		if err != nil {
			return fmt.Errorf("open database: %w", err)
		}
		defer db.Close()
		v, err := schemaVersion(ctx, db)
		if err != nil {
			return err
		}
		fmt.Fprintf(app.Stdout, "database schema version: %05d\n", v)
	}
	return nil
}

func binaryVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func sqlDist(app App, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: sql-dist takes one directory", ErrUsage)
	}
	if err := pginbox.WriteMigrations(args[0]); err != nil {
		return err
	}
	names, _ := pginbox.MigrationFiles()
	fmt.Fprintf(app.Stdout, "wrote %d migrations to %s\n", len(names), args[0])
	return nil
}
