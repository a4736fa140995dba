package tests

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox"
)

// oldReadmeGoose is the goose command the README printed up to 0.1.0: the
// stock CLI with its default version table (goose_db_version, in public).
// Databases migrated with it exist; pginbox must recognise them.
const oldReadmeGoose = `make sql-dist && goose -dir dist/migrations postgres "$DATABASE_URL" up`

// readmeGooseBlock returns the README's third way to install the schema:
// the ```sh block that runs bin/goose under "## Install the schema without
// the runner".
func readmeGooseBlock(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, "\n## Install the schema without the runner")
	if i < 0 {
		t.Fatal("README.md has no section \"Install the schema without the runner\"")
	}
	s = s[i:]
	if j := strings.Index(s[1:], "\n## "); j > 0 {
		s = s[:j+1]
	}
	for _, block := range strings.Split(s, "```sh\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.Contains(block, "goose -dir") {
			return block
		}
	}
	t.Fatal("README.md's install section has no sh block running goose")
	return ""
}

// repoLock serialises the tests that run make in the repository (they
// write dist/ and bin/).
var repoLock sync.Mutex

// runInRepo runs script with bash at the repository's root, with bin/ (where
// make goose puts the CLI) first on PATH and DATABASE_URL set, and returns
// its output.
func runInRepo(t *testing.T, databaseURL, script string) string {
	t.Helper()
	repoLock.Lock()
	defer repoLock.Unlock()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	psqlDir := filepath.Dir(needPsql(t))
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DATABASE_URL="+databaseURL,
		"PATH="+filepath.Join(root, "bin")+":"+psqlDir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

// pginboxCLI runs the pginbox binary with DATABASE_URL (and env) and
// returns its stdout and stderr.
func pginboxCLI(t *testing.T, databaseURL string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(pginboxBinary(t), args...)
	cmd.Env = append(append(os.Environ(), "DATABASE_URL="+databaseURL), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestReadmeGooseThenServe runs the README's goose commands, the one it
// prints now and the one it printed up to 0.1.0 (goose's default version
// table), each on an empty database with the real goose CLI (make goose),
// then what a user runs next: `pginbox version`, `pginbox serve` with
// PGINBOX_MIGRATE=false (/readyz must answer 200), `pginbox migrate` (up to
// date, nothing applied again) and `serve` with its migration. The three
// ways to install the schema must be equivalent.
func TestReadmeGooseThenServe(t *testing.T) {
	t.Parallel()
	latest, err := pginbox.LatestVersion()
	if err != nil {
		t.Fatal(err)
	}
	runInRepo(t, "", "make goose")
	for _, tc := range []struct {
		name, script string
		// defaultTable: the versions are in public.goose_db_version.
		defaultTable bool
	}{
		{"README now", readmeGooseBlock(t), false},
		{"README up to 0.1.0", oldReadmeGoose, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, conf := emptyDB(t)
			url := conf.URL()
			runInRepo(t, url, tc.script)
			var publicTable bool
			if err := db.QueryRow(`SELECT to_regclass('public.goose_db_version') IS NOT NULL`).Scan(&publicTable); err != nil {
				t.Fatal(err)
			}
			if publicTable != tc.defaultTable {
				t.Fatalf("after %q: public.goose_db_version exists: %v, want %v", tc.script, publicTable, tc.defaultTable)
			}
			want := fmt.Sprintf("database schema version: %05d\n", latest)
			if out, err := pginboxCLI(t, url, nil, "version"); err != nil || !strings.Contains(out, want) {
				t.Fatalf("pginbox version after the goose CLI: %v\n%s\nwant %q", err, out, want)
			}
			// startRunner fails the test unless /readyz answers 200.
			p := startRunner(t, map[string]string{
				"DATABASE_URL": url, "PGINBOX_MIGRATE": "false",
				"PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": sumeSecret,
			})
			if err := p.Terminate(10 * time.Second); err != nil {
				t.Fatalf("serve with PGINBOX_MIGRATE=false: %v\n%s", err, p.Logs())
			}
			upToDate := fmt.Sprintf("schema webhooks is up to date (version %05d)", latest)
			if out, err := pginboxCLI(t, url, nil, "migrate"); err != nil || !strings.Contains(out, upToDate) {
				t.Fatalf("pginbox migrate after the goose CLI: %v\n%s\nwant %q", err, out, upToDate)
			}
			var applied, distinct int
			if err := db.QueryRow(`SELECT count(*), count(DISTINCT version_id) FROM webhooks.goose_db_version WHERE version_id > 0 AND is_applied`).Scan(&applied, &distinct); err != nil {
				t.Fatal(err)
			}
			if n := migrationCount(t); applied != n || distinct != n {
				t.Fatalf("webhooks.goose_db_version holds %d versions (%d distinct) after pginbox migrate, want %d", applied, distinct, n)
			}
			p = startRunner(t, map[string]string{
				"DATABASE_URL": url, "PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": sumeSecret,
			})
			if err := p.Terminate(10 * time.Second); err != nil {
				t.Fatalf("serve: %v\n%s", err, p.Logs())
			}
			if tc.defaultTable {
				var rows int
				if err := db.QueryRow(`SELECT count(*) FROM public.goose_db_version`).Scan(&rows); err != nil {
					t.Fatal(err)
				}
				if rows != migrationCount(t)+1 {
					t.Fatalf("public.goose_db_version has %d rows, want the %d goose wrote (left as it was)", rows, migrationCount(t)+1)
				}
			}
		})
	}
}

// TestGooseDefaultTableAdopted: a schema the goose CLI migrated with its
// default version table is read and adopted in the states a user can leave
// it in, and an application's own goose_db_version is never taken for
// pginbox's:
//   - after a pginbox migrate that failed on it before pginbox recognised
//     the default table (webhooks.goose_db_version holds versions 0 and 1);
//   - after a goose run stopped part way (up-to): pginbox reads that version
//     and migrates the rest;
//   - next to an application's own goose_db_version whose versions overlap
//     pginbox's, with pginbox itself part way: pginbox reads its own table;
//   - after a goose that records a down as a row rolled a version back: the
//     newest row of each version decides;
//   - next to an application's table named goose_db_version of another
//     shape (other columns, or text versions): neither AppliedVersion nor
//     Migrate fails on it, and pginbox reads its own table.
func TestGooseDefaultTableAdopted(t *testing.T) {
	t.Parallel()
	goose := buildGoose(t)
	dist := t.TempDir()
	if err := pginbox.WriteMigrations(dist); err != nil {
		t.Fatal(err)
	}
	names, err := pginbox.MigrationFiles()
	if err != nil {
		t.Fatal(err)
	}
	version := func(i int) int64 {
		var v int64
		if _, err := fmt.Sscanf(names[i], "%05d", &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	latest, middle, early := version(len(names)-1), version(len(names)/2), version(4)
	ctx := context.Background()
	// reference is the catalog of a database pginbox migrated alone: each
	// case must end with the same schema (every migration really applied).
	refDB, _ := emptyDB(t)
	if err := pginbox.Migrate(ctx, refDB); err != nil {
		t.Fatal(err)
	}
	reference := catalogSnapshot(t, refDB)
	// upToEarly migrates a database whose public.goose_db_version is an
	// application's with pginbox's own migrator, part way.
	upToEarly := func(t *testing.T, db *sql.DB) {
		t.Helper()
		if _, err := db.Exec(`CREATE SCHEMA webhooks`); err != nil {
			t.Fatal(err)
		}
		p, err := pginbox.NewMigrationProvider(db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.UpTo(ctx, early); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// setup brings an empty database to the state under test.
		setup func(t *testing.T, db *sql.DB, url string)
		// read is what AppliedVersion must say before Migrate.
		read int64
	}{
		{"after a failed pginbox migrate", func(t *testing.T, db *sql.DB, url string) {
			run(t, nil, goose, "-dir", dist, "postgres", url, "up")
			p, err := pginbox.NewMigrationProvider(db)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, 1); err != nil {
				t.Fatal(err)
			}
			// What 0.1.0's migrate did next, and does without the adoption.
			if _, err := p.Up(ctx); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("goose's own Up on the CLI's schema: %v, want relation already exists", err)
			}
		}, latest},
		{"after a goose run stopped part way", func(t *testing.T, db *sql.DB, url string) {
			run(t, nil, goose, "-dir", dist, "postgres", url, "up-to", fmt.Sprint(middle))
		}, middle},
		{"next to an application's own goose table", func(t *testing.T, db *sql.DB, url string) {
			if _, err := db.Exec(`CREATE TABLE public.goose_db_version (id serial PRIMARY KEY, version_id bigint NOT NULL, is_applied boolean NOT NULL, tstamp timestamp DEFAULT now())`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO public.goose_db_version (version_id, is_applied) SELECT v, true FROM generate_series(0, $1::int + 10) AS v`, latest); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`CREATE SCHEMA webhooks`); err != nil {
				t.Fatal(err)
			}
			p, err := pginbox.NewMigrationProvider(db)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, early); err != nil {
				t.Fatal(err)
			}
		}, early},
		{"with a version goose rolled back", func(t *testing.T, db *sql.DB, url string) {
			// A goose that records a down as a row (is_applied false) rolled
			// back the version after middle; middle itself was rolled back
			// and applied again. Each version counts by its newest row.
			run(t, nil, goose, "-dir", dist, "postgres", url, "up-to", fmt.Sprint(middle))
			if _, err := db.Exec(`INSERT INTO public.goose_db_version (version_id, is_applied)
				VALUES ($1, false), ($1, true), ($2, true), ($2, false)`, middle, version(len(names)/2+1)); err != nil {
				t.Fatal(err)
			}
		}, middle},
		{"next to a goose_db_version of another shape", func(t *testing.T, db *sql.DB, url string) {
			if _, err := db.Exec(`CREATE TABLE public.goose_db_version (id serial PRIMARY KEY, version text NOT NULL, applied_at timestamptz DEFAULT now())`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO public.goose_db_version (version) SELECT v::text FROM generate_series(1, 5) AS v`); err != nil {
				t.Fatal(err)
			}
			upToEarly(t, db)
		}, early},
		{"next to a goose_db_version with text versions", func(t *testing.T, db *sql.DB, url string) {
			if _, err := db.Exec(`CREATE TABLE public.goose_db_version (id serial PRIMARY KEY, version_id text NOT NULL, is_applied boolean NOT NULL, tstamp timestamp DEFAULT now())`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO public.goose_db_version (version_id, is_applied) SELECT v::text, true FROM generate_series(0, 5) AS v`); err != nil {
				t.Fatal(err)
			}
			upToEarly(t, db)
		}, early},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, conf := emptyDB(t)
			tc.setup(t, db, conf.URL())
			var before string
			_ = db.QueryRow(`SELECT coalesce((SELECT string_agg(g::text, ',' ORDER BY g::text) FROM public.goose_db_version AS g), '')`).Scan(&before)
			pool := PoolFor(t, conf.URL(), 2)
			if v, err := pginbox.AppliedVersion(ctx, pool); err != nil || v != tc.read {
				t.Fatalf("AppliedVersion = %d (%v), want %d", v, err, tc.read)
			}
			if err := pginbox.Migrate(ctx, db); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			if v, err := pginbox.AppliedVersion(ctx, pool); err != nil || v != latest {
				t.Fatalf("after Migrate: AppliedVersion = %d (%v), want %d", v, err, latest)
			}
			var applied, distinct int
			if err := db.QueryRow(`SELECT count(*), count(DISTINCT version_id) FROM webhooks.goose_db_version WHERE version_id > 0 AND is_applied`).Scan(&applied, &distinct); err != nil {
				t.Fatal(err)
			}
			if applied != len(names) || distinct != len(names) {
				t.Fatalf("webhooks.goose_db_version: %d versions (%d distinct), want %d", applied, distinct, len(names))
			}
			if catalogSnapshot(t, db) != reference {
				t.Fatal("schema webhooks differs from one pginbox migrated alone")
			}
			var after string
			_ = db.QueryRow(`SELECT coalesce((SELECT string_agg(g::text, ',' ORDER BY g::text) FROM public.goose_db_version AS g), '')`).Scan(&after)
			if after != before {
				t.Fatal("Migrate changed public.goose_db_version")
			}
		})
	}
}
