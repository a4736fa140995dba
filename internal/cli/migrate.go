package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/database"
	"github.com/pginbox/pginbox/internal/envconfig"
)

// migrate is `pginbox migrate`: apply the pending migrations.
func migrate(ctx context.Context, app App, args []string) error {
	fs := newFlags("migrate", "migrate", "apply the SQL migrations to DATABASE_URL (or the embedded cluster)")
	withDataDir := dataDirFlag(fs)
	if err := fs.parse(app, args); err != nil {
		return err
	}
	app = withDataDir(app)
	if err := fs.noArgs(); err != nil {
		return err
	}
	env, err := envconfig.Read(app.Getenv, envconfig.Table)
	if err != nil {
		return err
	}
	databaseURL, variable := env.DatabaseURL(), "DATABASE_URL"
	if direct := env.String("PGINBOX_DIRECT_URL"); direct != "" {
		if _, err := pgx.ParseConfig(direct); err != nil {
			return database.ConnStringError("PGINBOX_DIRECT_URL", direct, err)
		}
		databaseURL, variable = direct, "PGINBOX_DIRECT_URL"
	} else if databaseURL != "" {
		if _, err := pgx.ParseConfig(databaseURL); err != nil {
			return database.ConnStringError("DATABASE_URL", databaseURL, err)
		}
		// The migration's session advisory lock is no lock through a
		// transaction pooler: two deploys could migrate at once.
		pooled, err := database.TransactionPooled(ctx, databaseURL)
		if err != nil {
			return fmt.Errorf("migrate: %w", database.Unreachable("DATABASE_URL", err))
		}
		if pooled {
			return fmt.Errorf("migrate: %w, where the migration's session lock would not hold: "+
				"set PGINBOX_DIRECT_URL to a direct connection to the database (or run with DATABASE_URL pointing at it)", database.ErrTransactionPooler)
		}
	}
	pool, closePool, err := openPool(ctx, app, variable, databaseURL, env.DataDir(), true)
	if err != nil {
		return err
	}
	defer closePool()
	before, _ := schemaVersion(ctx, pool)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	if err := pginbox.Migrate(ctx, db); err != nil {
		return err
	}
	after, err := schemaVersion(ctx, pool)
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

// schemaVersion returns the newest applied migration (0 for none):
// [pginbox.AppliedVersion].
func schemaVersion(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return pginbox.AppliedVersion(ctx, pool)
}

// version is `pginbox version`: the binary's and, with DATABASE_URL, the
// database's schema version.
func version(ctx context.Context, app App, args []string) error {
	fs := newFlags("version", "version", "print the binary and schema versions (the database's when DATABASE_URL is set)")
	if err := fs.parse(app, args); err != nil {
		return err
	}
	if err := fs.noArgs(); err != nil {
		return err
	}
	env, err := envconfig.Read(app.Getenv, envconfig.Table)
	if err != nil {
		return err
	}
	names, err := pginbox.MigrationFiles()
	if err != nil {
		return err
	}
	latest, err := pginbox.LatestVersion()
	if err != nil {
		return err
	}
	fmt.Fprintf(app.Stdout, "pginbox %s (%s), embedded migrations: %d (latest %05d)\n",
		binaryVersion(), runtime.Version(), len(names), latest)
	if env.DatabaseURL() == "" {
		return nil // never start the embedded cluster just to print a version
	}
	pool, closePool, err := openPool(ctx, app, "DATABASE_URL", env.DatabaseURL(), env.DataDir(), false)
	if err != nil {
		return err
	}
	defer closePool()
	v, err := schemaVersion(ctx, pool)
	if err != nil {
		return err
	}
	fmt.Fprintf(app.Stdout, "database schema version: %05d\n", v)
	return nil
}

// binaryVersion is Version, else the module version, else "dev".
func binaryVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// sqlDist is `pginbox sql-dist DIR`: write the flattened migrations for the
// stock goose CLI.
func sqlDist(app App, args []string) error {
	fs := newFlags("sql-dist", "sql-dist DIR", "write the flattened migrations to DIR for the stock goose CLI")
	if err := fs.parse(app, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fs.usageError("sql-dist takes one directory")
	}
	dir := fs.Arg(0)
	if err := pginbox.WriteMigrations(dir); err != nil {
		return err
	}
	names, _ := pginbox.MigrationFiles()
	fmt.Fprintf(app.Stdout, "wrote %d migrations to %s\n", len(names), dir)
	return nil
}
