package tests

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/peterldowns/pgtestdb"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/localpg"
)

// emptyDB returns a fresh database with nothing migrated.
func emptyDB(t *testing.T) (*sql.DB, *pgtestdb.Config) {
	t.Helper()
	conf := pgtestdb.Custom(t, Server(t), pgtestdb.NoopMigrator{})
	db, err := sql.Open("pgx", conf.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, conf
}

func migrationCount(t *testing.T) int {
	t.Helper()
	names, err := pginbox.MigrationFiles()
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// TestMigrateUpTwice: up on an empty database applies every migration; up
// again is a no-op.
func TestMigrateUpTwice(t *testing.T) {
	t.Parallel()
	db, _ := emptyDB(t)
	ctx := context.Background()
	if err := pginbox.Migrate(ctx, db); err != nil {
		t.Fatalf("first migrate: %v", err)
	}
	p, err := pginbox.NewMigrationProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	pending, err := p.HasPending(ctx)
	if err != nil || pending {
		t.Fatalf("pending after migrate: %v, %v", pending, err)
	}
	res, err := p.Up(ctx)
	if err != nil || len(res) != 0 {
		t.Fatalf("second up applied %d migrations (err %v)", len(res), err)
	}
	if err := pginbox.Migrate(ctx, db); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	var applied int
	if err := db.QueryRow(`SELECT count(*) FROM webhooks.goose_db_version WHERE version_id > 0`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if want := migrationCount(t); applied != want {
		t.Fatalf("version rows %d, want %d (one per migration, none twice)", applied, want)
	}
}

// TestMigrateConcurrent: several migrators racing on one empty database all
// succeed and apply each migration once (goose session locker).
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	_, conf := emptyDB(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := sql.Open("pgx", conf.URL())
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			errs <- pginbox.Migrate(context.Background(), db)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent migrate: %v", err)
		}
	}
	db, _ := sql.Open("pgx", conf.URL())
	defer db.Close()
	var applied, distinct int
	if err := db.QueryRow(`SELECT count(*), count(DISTINCT version_id) FROM webhooks.goose_db_version WHERE version_id > 0`).Scan(&applied, &distinct); err != nil {
		t.Fatal(err)
	}
	if want := migrationCount(t); applied != want || distinct != want {
		t.Fatalf("applied %d (%d distinct), want %d", applied, distinct, want)
	}
}

// TestMigrateLeavesOtherSchemasAlone: an application's own schemas, tables,
// functions and even its own goose_db_version table are untouched.
func TestMigrateLeavesOtherSchemasAlone(t *testing.T) {
	t.Parallel()
	db, _ := emptyDB(t)
	ctx := context.Background()
	for _, stmt := range []string{
		`CREATE SCHEMA app`,
		`CREATE TABLE app.orders (id int PRIMARY KEY, note text)`,
		`INSERT INTO app.orders VALUES (1, 'keep me')`,
		`CREATE FUNCTION app.f() RETURNS int LANGUAGE sql AS 'SELECT 1'`,
		// The application uses goose too, with versions that overlap ours.
		`CREATE TABLE public.goose_db_version (id serial PRIMARY KEY, version_id bigint NOT NULL, is_applied boolean NOT NULL, tstamp timestamp DEFAULT now())`,
		`INSERT INTO public.goose_db_version (version_id, is_applied) VALUES (0, true), (1, true), (2, true), (3, true)`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	snapshot := func() string {
		var s string
		err := db.QueryRowContext(ctx, `
			SELECT concat_ws(E'\n',
			  (SELECT string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ',' ORDER BY 1)
			     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			    WHERE n.nspname NOT IN ('webhooks', 'pg_catalog', 'information_schema', 'pg_toast')),
			  (SELECT string_agg(p.oid::regprocedure::text, ',' ORDER BY 1)
			     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			    WHERE n.nspname NOT IN ('webhooks', 'pg_catalog', 'information_schema')),
			  (SELECT string_agg(nspname, ',' ORDER BY 1) FROM pg_namespace WHERE nspname <> 'webhooks'),
			  (SELECT string_agg(extname, ',' ORDER BY 1) FROM pg_extension),
			  (SELECT string_agg(version_id::text, ',' ORDER BY id) FROM public.goose_db_version),
			  (SELECT string_agg(id || note, ',') FROM app.orders))`).Scan(&s)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := snapshot()
	if err := pginbox.Migrate(ctx, db); err != nil {
		t.Fatalf("migrate next to an application: %v", err)
	}
	if after := snapshot(); after != before {
		t.Fatalf("objects outside webhooks changed:\nbefore: %s\nafter:  %s", before, after)
	}
}

// TestGooseCLIMatchesMigrate: the flattened files (make sql-dist) applied by
// the stock goose CLI produce the same schema as pginbox.Migrate, and a
// database migrated by the CLI with GOOSE_TABLE=webhooks.goose_db_version is
// up to date for pginbox.Migrate.
func TestGooseCLIMatchesMigrate(t *testing.T) {
	t.Parallel()
	pgDump := findTool(t, "pg_dump")
	goose := buildGoose(t)
	dist := t.TempDir()
	if err := pginbox.WriteMigrations(dist); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dist, "*.sql"))
	if len(files) != migrationCount(t) {
		t.Fatalf("sql-dist wrote %d files, want %d", len(files), migrationCount(t))
	}

	viaGo, goConf := emptyDB(t)
	if err := pginbox.Migrate(context.Background(), viaGo); err != nil {
		t.Fatal(err)
	}
	cliDB, cliConf := emptyDB(t)
	// The documented command, as written: goose -dir dist/migrations postgres "$DATABASE_URL" up.
	run(t, nil, goose, "-dir", dist, "postgres", cliConf.URL(), "up")

	dump := func(conf *pgtestdb.Config) string {
		out := run(t, nil, pgDump, "--schema-only", "--no-owner", "--schema=webhooks",
			"--exclude-table=webhooks.goose_db_version", "-d", conf.URL())
		// Newer pg_dump wraps the dump in \restrict <random key> lines.
		var kept []string
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "\\restrict ") && !strings.HasPrefix(line, "\\unrestrict ") {
				kept = append(kept, line)
			}
		}
		return strings.Join(kept, "\n")
	}
	// The catalogs, compared on any server version.
	ca, cb := catalogSnapshot(t, viaGo), catalogSnapshot(t, cliDB)
	if !strings.Contains(ca, "webhooks.ingest_webhook") || ca != cb {
		t.Fatalf("catalogs differ (or are empty):\n--- pginbox.Migrate\n%s\n--- goose CLI\n%s", ca, cb)
	}
	// pg_dump, when the installed one can dump this server (the npm builds
	// of other majors ship no pg_dump).
	if dumpMajor, serverMajor := toolMajor(t, pgDump), serverMajor(t, viaGo); dumpMajor < serverMajor {
		t.Logf("pg_dump %d cannot dump server %d: compared the catalogs only", dumpMajor, serverMajor)
	} else {
		a, b := dump(goConf), dump(cliConf)
		if !strings.Contains(a, "CREATE VIEW webhooks.events") {
			t.Fatalf("dump does not show webhooks.events:\n%s", a)
		}
		if a != b {
			t.Fatalf("schemas differ:\n--- pginbox.Migrate\n%s\n--- goose CLI\n%s", a, b)
		}
	}

	// The recommended CLI form shares pginbox's version table; goose creates
	// that table before running any migration, so the schema comes first.
	mixed, mixedConf := emptyDB(t)
	if _, err := mixed.Exec(`CREATE SCHEMA IF NOT EXISTS webhooks`); err != nil {
		t.Fatal(err)
	}
	run(t, []string{"GOOSE_TABLE=" + pginbox.VersionTable}, goose, "-dir", dist, "postgres", mixedConf.URL(), "up")
	p, err := pginbox.NewMigrationProvider(mixed)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := p.Up(context.Background()); err != nil || len(res) != 0 {
		t.Fatalf("pginbox after the goose CLI applied %d migrations (err %v), want none", len(res), err)
	}
}

// catalogSnapshot describes every object of schema webhooks from the
// catalogs: relations with their columns, constraints and indexes, views,
// functions with their definitions, and comments.
func catalogSnapshot(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	err := db.QueryRow(`
		SELECT concat_ws(E'\n--\n',
		  (SELECT string_agg(format('%s %s: %s', c.relkind, c.relname,
		          (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
		                             || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''), ', ' ORDER BY a.attnum)
		             FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		            WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)), E'\n' ORDER BY c.relname)
		     FROM pg_class c WHERE c.relnamespace = 'webhooks'::regnamespace AND c.relname <> 'goose_db_version'
		       AND c.relname NOT LIKE 'goose_db_version%'),
		  (SELECT string_agg(conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid), E'\n' ORDER BY conrelid::regclass::text, conname)
		     FROM pg_constraint WHERE connamespace = 'webhooks'::regnamespace AND conrelid <> coalesce(to_regclass('webhooks.goose_db_version'), 0)),
		  (SELECT string_agg(pg_get_indexdef(i.indexrelid), E'\n' ORDER BY pg_get_indexdef(i.indexrelid))
		     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		    WHERE c.relnamespace = 'webhooks'::regnamespace AND i.indrelid <> coalesce(to_regclass('webhooks.goose_db_version'), 0)),
		  (SELECT string_agg(c.relname || ' ' || pg_get_viewdef(c.oid), E'\n' ORDER BY c.relname)
		     FROM pg_class c WHERE c.relnamespace = 'webhooks'::regnamespace AND c.relkind IN ('v', 'm')),
		  (SELECT string_agg(pg_get_functiondef(p.oid) || coalesce(array_to_string(p.proacl, ','), ''), E'\n' ORDER BY p.oid::regprocedure::text)
		     FROM pg_proc p WHERE p.pronamespace = 'webhooks'::regnamespace),
		  (SELECT string_agg(coalesce(obj_description(p.oid, 'pg_proc'), ''), E'\n' ORDER BY p.oid::regprocedure::text)
		     FROM pg_proc p WHERE p.pronamespace = 'webhooks'::regnamespace))`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// toolMajor returns the major version of a Postgres client program.
func toolMajor(t *testing.T, tool string) int {
	t.Helper()
	out := run(t, nil, tool, "--version") // "pg_dump (PostgreSQL) 15.18 (Debian ...)"
	fields := strings.Fields(out)
	for _, f := range fields {
		if major, _, ok := strings.Cut(f, "."); ok {
			if n, err := strconv.Atoi(major); err == nil {
				return n
			}
		}
	}
	t.Fatalf("cannot read the version of %s: %q", tool, out)
	return 0
}

// serverMajor returns the server's major version.
func serverMajor(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT current_setting('server_version_num')::int / 10000`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// findTool finds a Postgres client program next to the server binaries or
// on PATH.
func findTool(t *testing.T, name string) string {
	t.Helper()
	if dir := os.Getenv("PGINBOX_PG_BINDIR"); dir != "" && fileExists(filepath.Join(dir, name)) {
		return filepath.Join(dir, name)
	}
	if dir, err := localpg.FindBinDir(); err == nil {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: install the PostgreSQL client (make test does)", name)
	}
	return p
}

// buildGoose builds the stock goose CLI with only its Postgres driver, as
// make goose does: from the module tools/goose, which keeps the CLI's other
// drivers out of pginbox's module graph.
func buildGoose(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "goose")
	tools, err := filepath.Abs(filepath.Join("..", "tools", "goose"))
	if err != nil {
		t.Fatal(err)
	}
	run(t, nil, "go", "build", "-C", tools, "-tags", "no_clickhouse no_libsql no_mssql no_mysql no_sqlite3 no_vertica no_ydb",
		"-o", out, "github.com/pressly/goose/v3/cmd/goose")
	return out
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestSchemaVersions: AppliedVersion reads 0 from a database never migrated
// (no version table), the version goose stopped at after a partial run, and
// LatestVersion after a full one.
func TestSchemaVersions(t *testing.T) {
	t.Parallel()
	db, conf := emptyDB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, conf.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	applied := func() int64 {
		t.Helper()
		v, err := pginbox.AppliedVersion(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := applied(); v != 0 {
		t.Fatalf("never migrated: AppliedVersion = %d, want 0", v)
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA webhooks`); err != nil {
		t.Fatal(err)
	}
	p, err := pginbox.NewMigrationProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if v := applied(); v != 5 {
		t.Fatalf("migrated to 5: AppliedVersion = %d", v)
	}
	if err := pginbox.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	latest, err := pginbox.LatestVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v := applied(); v != latest || latest != int64(migrationCount(t)) {
		t.Fatalf("fully migrated: AppliedVersion = %d, LatestVersion = %d, %d migrations", v, latest, migrationCount(t))
	}
}
