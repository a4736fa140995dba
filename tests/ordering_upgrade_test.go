package tests

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/sqlsrc"
)

// publishSources are the files whose migrations replace the published list
// of ordered providers (_ordered_providers) or its writer (the trigger
// _ordering_publish).
var publishSources = []string{"sql/src/order/_ordered_providers.sql", "sql/src/order/_ordering_publish.sql"}

// quotedProvider is a provider name that needs quoting in SQL, a literal
// and a dollar-quoted body alike.
const quotedProvider = `it's $body$ "x"`

// regeneratedMigrations returns the migrations `make sql-migrations` would
// write after a routine edit (one comment line more at the top) of each of
// the given sources once this checkout is released: sqlsrc's own generator
// run over a copy of this checkout's migrations and sources, numbered after
// its newest migration. The copy leaves out sql/released.sha256, so every
// migration counts as released and each edit adds a migration rather than
// folding into an unreleased one (which a database already past it would
// never apply).
func regeneratedMigrations(t *testing.T, edited ...string) []sqlsrc.File {
	t.Helper()
	root := os.DirFS(repoRoot(t))
	tree := fstest.MapFS{}
	err := fs.WalkDir(root, "sql", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".sql" {
			return err
		}
		data, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		if slices.Contains(edited, p) {
			data = append([]byte("-- (a routine edit: one comment line more)\n"), data...)
		}
		tree[p] = &fstest.MapFile{Data: data, Mode: 0o444}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := sqlsrc.Load(tree)
	if err != nil {
		t.Fatal(err)
	}
	files := loaded.Pending()
	if len(files) != len(edited) {
		t.Fatalf("the generator wrote %d migrations for %d edited sources: %v", len(files), len(edited), files)
	}
	for _, f := range files {
		if f.Fold {
			t.Fatalf("the generator folded %s into %s: want a new migration after a release", f.Source, f.Path)
		}
	}
	return files
}

// migrationProvider is pginbox's goose provider over its migrations plus
// extra (flattened to their file names), as NewMigrationProvider makes it.
func migrationProvider(t *testing.T, db *sql.DB, extra []sqlsrc.File) *goose.Provider {
	t.Helper()
	fsys, err := pginbox.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	all := fstest.MapFS{}
	if err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		all[p] = &fstest.MapFile{Data: data, Mode: 0o444}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range extra {
		all[path.Base(f.Path)] = &fstest.MapFile{Data: []byte(f.Text), Mode: 0o444}
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, all,
		goose.WithTableName(pginbox.VersionTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// setOrdering turns ordering on for provider "shop" and quotedProvider.
func setOrdering(t *testing.T, ctx context.Context, c *pgx.Conn) {
	t.Helper()
	for _, p := range []string{"shop", quotedProvider} {
		if _, err := c.Exec(ctx, `SELECT webhooks.set_ordering($1, '$.customer')`, p); err != nil {
			t.Fatalf("set_ordering(%q): %v", p, err)
		}
	}
}

// wantOrdering fails t unless _ordered_providers() lists "shop" and
// quotedProvider, and a delivery to each gets its sequence key: ingest
// still orders them.
func wantOrdering(t *testing.T, ctx context.Context, c *pgx.Conn) {
	t.Helper()
	var got []string
	if err := c.QueryRow(ctx, `SELECT webhooks._ordered_providers()`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := []string{quotedProvider, "shop"}; !slices.Equal(got, want) {
		t.Errorf("_ordered_providers() = %q, want %q", got, want)
	}
	for i, p := range []string{"shop", quotedProvider} {
		var id int64
		if err := c.QueryRow(ctx, `SELECT event_id FROM webhooks.ingest_webhook($1, $2, 't', $3::jsonb)`,
			p, fmt.Sprintf("after_%d", i), `{"customer": "cus_1"}`).Scan(&id); err != nil {
			t.Fatalf("ingest for %q: %v", p, err)
		}
		var key *string
		if err := c.QueryRow(ctx, `SELECT order_key FROM webhooks.events WHERE id = $1`, id).Scan(&key); err != nil {
			t.Fatal(err)
		}
		if key == nil || *key != "cus_1" {
			t.Errorf("a delivery to %q after the migration: order_key %v, want cus_1 (ingest no longer orders it)", p, key)
		}
	}
}

// TestOrderingSurvivesRegeneratedMigrations: a database with ordering on
// (for a provider whose name needs quoting too) keeps it through the next
// migration `make sql-migrations` writes after a routine edit of the file of
// _ordered_providers, of its trigger _ordering_publish, or of both: the
// published list still names every ordered provider, and ingest still
// orders their deliveries. The body in the source file is the empty list; a
// migration that only replaced the function from it would leave every
// provider unordered until the next set_ordering().
func TestOrderingSurvivesRegeneratedMigrations(t *testing.T) {
	t.Parallel()
	for _, edited := range [][]string{publishSources[:1], publishSources[1:], publishSources} {
		t.Run(fmt.Sprint(edited), func(t *testing.T) {
			t.Parallel()
			files := regeneratedMigrations(t, edited...)
			db, conf := emptyDB(t)
			ctx := context.Background()
			if _, err := db.ExecContext(ctx, `CREATE SCHEMA webhooks`); err != nil {
				t.Fatal(err)
			}
			latest, err := pginbox.LatestVersion()
			if err != nil {
				t.Fatal(err)
			}
			p := migrationProvider(t, db, files)
			if _, err := p.UpTo(ctx, latest); err != nil {
				t.Fatalf("up to %d: %v", latest, err)
			}
			c := connect(t, conf.URL())
			setOrdering(t, ctx, c)
			res, err := p.Up(ctx)
			if err != nil {
				t.Fatalf("apply the regenerated migrations: %v", err)
			}
			if len(res) != len(files) {
				t.Fatalf("applied %d migrations, want the %d regenerated", len(res), len(files))
			}
			wantOrdering(t, ctx, c)
		})
	}
}

// TestOrderingSurvivesUpgrade: a database migrated up to just before each
// migration that replaces _ordered_providers or _ordering_publish, with
// ordering then turned on, still orders those providers once migrated to the
// end, and then through the migrations the next routine edit of both files
// would add.
func TestOrderingSurvivesUpgrade(t *testing.T) {
	t.Parallel()
	tree := loadSQLSources(t)
	next := regeneratedMigrations(t, publishSources...)
	var before []int64
	for _, m := range tree.Migrations {
		if m.Key == "_ordered_providers" || m.Key == "_ordering_publish" {
			before = append(before, int64(m.Version-1))
		}
	}
	if len(before) < 2 {
		t.Fatalf("found %d migrations of _ordered_providers and _ordering_publish, want at least 2", len(before))
	}
	for _, v := range before {
		t.Run(fmt.Sprintf("from %05d", v), func(t *testing.T) {
			t.Parallel()
			db, conf := emptyDB(t)
			ctx := context.Background()
			if _, err := db.ExecContext(ctx, `CREATE SCHEMA webhooks`); err != nil {
				t.Fatal(err)
			}
			p := migrationProvider(t, db, next)
			if _, err := p.UpTo(ctx, v); err != nil {
				t.Fatalf("up to %d: %v", v, err)
			}
			c := connect(t, conf.URL())
			setOrdering(t, ctx, c)
			if _, err := p.Up(ctx); err != nil {
				t.Fatalf("up: %v", err)
			}
			wantOrdering(t, ctx, c)
		})
	}
}
