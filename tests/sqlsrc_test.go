package tests

import (
	"context"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/sqlsrc"
)

// loadSQLSources reads the canonical sources and migrations of this checkout.
func loadSQLSources(t *testing.T) *sqlsrc.Tree {
	t.Helper()
	tree, err := sqlsrc.Load(os.DirFS(".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Sources) < 50 {
		t.Fatalf("only %d sources under sql/src: the test is not reading the checkout", len(tree.Sources))
	}
	return tree
}

// TestSQLSourcesMatchMigrations: every function, view and family of checks
// has one source under sql/src, and its newest migration states exactly that
// source's text, so the source is the one file to edit (then run make
// sql-migrations). It fails on a source that differs from its newest
// migration or has none, a migrated object with no source, two sources of one
// object, a function file holding two functions, and a misnamed file.
func TestSQLSourcesMatchMigrations(t *testing.T) {
	t.Parallel()
	tree := loadSQLSources(t)
	for _, p := range tree.Problems() {
		t.Error(p)
	}
	for _, f := range tree.Pending() {
		t.Errorf("%s is due: run make sql-migrations", f.Path)
	}
}

var checkRow = regexp.MustCompile(`(?m)^\('([a-z0-9_]+)', '([a-z]+)',$`)

// TestSQLSourcesCoverTheCatalog: in a freshly migrated database, every
// function and view of the schema webhooks is the one object of exactly one
// source (by the signature its COMMENT ON names), and every row of
// webhooks.checks is written by the source of its family.
func TestSQLSourcesCoverTheCatalog(t *testing.T) {
	t.Parallel()
	tree := loadSQLSources(t)
	pool := NewPool(t, 1)
	ctx := context.Background()

	comment := regexp.MustCompile(`(?im)^COMMENT\s+ON\s+(?:FUNCTION|VIEW|MATERIALIZED\s+VIEW)\s+(webhooks\.[a-z0-9_]+(?:\([^)]*\))?)\s+IS`)
	bySig := map[string]string{} // the catalog's name of an object -> its source
	want := map[string]string{}  // check name -> family
	for _, s := range tree.Sources {
		if s.Kind == sqlsrc.Checks {
			for _, m := range checkRow.FindAllStringSubmatch(s.Text, -1) {
				if s.Key != "checks_"+m[2] {
					t.Errorf("%s writes check %s of family %s", s.Path, m[1], m[2])
				}
				want[m[1]] = m[2]
			}
			continue
		}
		m := comment.FindStringSubmatch(s.Text)
		if m == nil {
			t.Errorf("%s: no COMMENT ON", s.Path)
			continue
		}
		cast := "regclass"
		if s.Kind == sqlsrc.Function {
			cast = "regprocedure"
		}
		var name string
		if err := pool.QueryRow(ctx, `SELECT $1::`+cast+`::text`, m[1]).Scan(&name); err != nil {
			t.Errorf("%s comments on %s, which the migrated database does not have: %v", s.Path, m[1], err)
			continue
		}
		if prev, ok := bySig[name]; ok {
			t.Errorf("%s and %s both define %s", prev, s.Path, name)
		}
		bySig[name] = s.Path
	}

	rows, err := pool.Query(ctx, `
		SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p
		WHERE p.pronamespace = 'webhooks'::regnamespace
		UNION ALL
		SELECT c.oid::regclass::text FROM pg_catalog.pg_class AS c
		WHERE c.relnamespace = 'webhooks'::regnamespace AND c.relkind IN ('v', 'm')`)
	if err != nil {
		t.Fatal(err)
	}
	var objects []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(objects)
	for _, o := range objects {
		if _, ok := bySig[o]; !ok {
			t.Errorf("%s has no source under sql/src", o)
		}
	}
	if len(objects) != len(bySig) {
		t.Errorf("%d functions and views in the database, %d sources of one", len(objects), len(bySig))
	}

	got := map[string]string{}
	rows, err = pool.Query(ctx, `SELECT name, family FROM webhooks.checks`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, family string
		if err := rows.Scan(&name, &family); err != nil {
			t.Fatal(err)
		}
		got[name] = family
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) < 10 {
		t.Fatalf("only %d checks", len(got))
	}
	for name, family := range got {
		if want[name] != family {
			t.Errorf("check %s (%s) is not written by sql/src/*/checks_%s.sql", name, family, family)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("check %s is in a source but not in the migrated database", name)
		}
	}
}

// TestSQLSourcesPinSharedLogic: the two lease paths, two-phase (claim(),
// fail(), process_batch()) and row-lock (_lock_pending(), _fail_pending(),
// process_pending()), each write out the same three pieces of logic: the
// claimable pick, the retry rule and the handler look-up and error text.
// They stay written twice, inline: a shared helper would be a function call
// where the planner now sees one statement, and a volatile set-returning SQL
// function (FOR UPDATE SKIP LOCKED makes the pick one) is never inlined.
// Measured with pgbench, 8 clients x process_pending(batch 100) over 50,000
// events: 66-117 transactions/s with the pick inline, 25-34 with it in a
// shared SQL helper. This test keeps the two copies equal, apart from the function name that qualifies the
// arguments and, for the retry rule, the attempt number (the two-phase path
// counted the attempt at claim, the row-lock path counts it here).
func TestSQLSourcesPinSharedLogic(t *testing.T) {
	t.Parallel()
	tree := loadSQLSources(t)
	text := map[string]string{}
	for _, s := range tree.Sources {
		text[s.Key] = s.Text
	}
	// between returns the lines of a source from the first that starts
	// (after indentation) with first up to the next that starts with last
	// (that same line when first == last), normalised: indentation and runs of spaces collapsed, fn.
	// argument qualifiers replaced with $fn., then each replacement.
	between := func(t *testing.T, key, first, last string, replace ...string) string {
		t.Helper()
		src, ok := text[key]
		if !ok {
			t.Fatalf("no source %s", key)
		}
		var out []string
		in := false
		for _, line := range strings.Split(src, "\n") {
			trimmed := strings.Join(strings.Fields(line), " ")
			if !in && strings.HasPrefix(trimmed, first) {
				in = true
			}
			if in {
				out = append(out, trimmed)
				if (len(out) > 1 || first == last) && strings.HasPrefix(trimmed, last) {
					break
				}
			}
		}
		if len(out) == 0 || !strings.HasPrefix(out[len(out)-1], last) {
			t.Fatalf("%s: no lines from %q to %q", key, first, last)
		}
		s := strings.ReplaceAll(strings.Join(out, "\n"), key+".", "$fn.")
		return strings.NewReplacer(replace...).Replace(s)
	}
	for _, tc := range []struct {
		name        string
		first, last string
		a, b        string
		ra, rb      []string
	}{
		{name: "claimable pick", first: "WITH picked AS MATERIALIZED (", last: ")", a: "claim", b: "_lock_pending"},
		{name: "paused providers", first: "SELECT coalesce(pg_catalog.array_agg(pp.provider)", last: "SELECT coalesce(pg_catalog.array_agg(pp.provider)", a: "claim", b: "_lock_pending"},
		{name: "max_events bounds", first: "IF $fn.max_events IS NULL", last: "END IF;", a: "claim", b: "_lock_pending"},
		{name: "claimable pick, runs", first: "WHERE e.status = 'pending'", last: "ORDER BY e.run_after, e.id", a: "_lock_pending", b: "_lock_sequences"},
		{name: "paused providers, runs", first: "SELECT coalesce(pg_catalog.array_agg(pp.provider)", last: "SELECT coalesce(pg_catalog.array_agg(pp.provider)", a: "claim", b: "_lock_sequences"},
		{name: "max_events bounds, runs", first: "IF $fn.max_events IS NULL", last: "END IF;", a: "claim", b: "_lock_sequences"},
		{name: "the runs behind heads", first: "WITH h AS (", last: "FOR UPDATE OF e SKIP LOCKED", a: "_lock_run", b: "_lock_sequences"},
		{name: "a locked row as a claim hands it out", first: "SELECT e.id, e.provider, e.external_id, e.event_type,", last: "e.trace_parent, e.trace_link", a: "_lock_pending", b: "_lock_run"},
		{name: "a locked row as a claim hands it out, runs", first: "SELECT e.id, e.provider, e.external_id, e.event_type,", last: "e.trace_parent, e.trace_link", a: "_lock_pending", b: "_lock_sequences"},
		{
			name: "retry rule", first: "SET status =", last: "END,", a: "fail", b: "_fail_pending",
			ra: []string{"e.attempts", "$attempt"}, rb: []string{"e.attempts + 1", "$attempt"},
		},
		{name: "error kept", first: "last_error = left(", last: "last_error = left(", a: "fail", b: "_fail_pending"},
		{name: "error history", first: "IF v_status IS NOT NULL THEN", last: "END IF;", a: "fail", b: "_fail_pending"},
		{name: "handler look-up", first: "SELECT pg_catalog.format('%I.%I'", last: "END IF;", a: "process_batch", b: "process_pending"},
		{name: "handler error", first: "error := pg_catalog.format('sql handler", last: "error := pg_catalog.format('sql handler", a: "process_batch", b: "process_pending"},
		{
			name: "late against the mark", first: "AND CASE WHEN m.marked_at = now()", last: "END", a: "_order_mark_late", b: "_mark_processed",
			ra: []string{"NEW.", "e.", "END);", "END"}, rb: []string{"END))", "END"},
		},
		{
			name: "the mark moves forward", first: "ON CONFLICT (provider, order_key) DO UPDATE", last: "> (coalesce(m.order_num", a: "_order_mark_late", b: "_mark_processed",
			ra: []string{"m.event_id);", "m.event_id)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The "max_events bounds" start line is itself qualified.
			first := func(key string) string { return strings.ReplaceAll(tc.first, "$fn.", key+".") }
			a := between(t, tc.a, first(tc.a), tc.last, tc.ra...)
			b := between(t, tc.b, first(tc.b), tc.last, tc.rb...)
			if a != b {
				t.Errorf("%s differs between sql/src %s.sql and %s.sql; keep them equal:\n--- %s\n%s\n--- %s\n%s",
					tc.name, tc.a, tc.b, tc.a, a, tc.b, b)
			}
		})
	}
}
