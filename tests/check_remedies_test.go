package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/runner"
)

// TestCheckRemediesMatchReference: the remedy of every check is a column
// its family's source fills (webhooks.checks.remedy, sql/src/watch), and
// docs/reference.md's checks table repeats it: one row per check, its
// family, and as last cell the column's text exactly. The table follows the
// column: a check without a remedy, a row without a check or a remedy
// edited on one side only fails here.
func TestCheckRemediesMatchReference(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	type check struct{ family, remedy string }
	stored := map[string]check{}
	rows, err := pool.Query(context.Background(), `SELECT name, family, remedy FROM webhooks.checks ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var c check
		if err := rows.Scan(&name, &c.family, &c.remedy); err != nil {
			t.Fatal(err)
		}
		stored[name] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	const header = "| check | family | what it means | default range | what to do when it fires |"
	_, table, ok := strings.Cut(string(doc), header+"\n|---|---|---|---|---|\n")
	if !ok {
		t.Fatalf("docs/reference.md has no checks table headed %q", header)
	}
	documented := map[string]check{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | ")
		if len(cells) != 5 {
			t.Errorf("docs/reference.md checks row with %d cells, want 5: %s", len(cells), line)
			continue
		}
		documented[strings.Trim(cells[0], "`")] = check{family: cells[1], remedy: cells[4]}
	}
	if len(stored) < 30 {
		t.Fatalf("only %d checks in webhooks.checks", len(stored))
	}
	for name, c := range stored {
		d, ok := documented[name]
		switch {
		case c.remedy == "":
			t.Errorf("check %s has no remedy: write it in its family's source (sql/src/watch/checks_%s.sql)", name, c.family)
		case !ok:
			t.Errorf("check %s has no row in docs/reference.md's checks table", name)
		case d.family != c.family:
			t.Errorf("check %s: family %q in the docs, %q in webhooks.checks", name, d.family, c.family)
		case d.remedy != c.remedy:
			t.Errorf("check %s: the docs' remedy differs from webhooks.checks.remedy (the source): copy the column into the table\n docs:   %s\n column: %s",
				name, d.remedy, c.remedy)
		}
	}
	for name := range documented {
		if _, ok := stored[name]; !ok {
			t.Errorf("docs/reference.md's checks table has a row for %s, which is no check", name)
		}
	}
}

// TestConsoleShowsRemedyColumn: the console shows a breached check's
// remedy from webhooks.checks.remedy, so an operator's own check carries
// its own, and /api/status gives it for every check.
func TestConsoleShowsRemedyColumn(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	execSQL(t, pool, `
		INSERT INTO webhooks.checks (name, family, description, query, min_ok, max_ok, remedy)
		VALUES ('own_check_always_breaches', 'volume', 'an operator''s own check', 'SELECT 1', NULL, 0, $1)`,
		"Page the `on-call` & <stop> the loop")
	runChecks(t, pool)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)

	code, _, page := adminDo(t, nil, "GET", srv.Admin+"/", testAdminToken, "", nil)
	if code != 200 {
		t.Fatalf("GET /: %d %s", code, page)
	}
	want := `<b>What to do:</b> Page the <code>on-call</code> &amp; &lt;stop&gt; the loop</p>`
	if !strings.Contains(page, want) {
		t.Errorf("the overview does not show the check's remedy %q", want)
	}
	code, _, body := adminDo(t, nil, "GET", srv.Admin+"/api/status", testAdminToken, "", nil)
	if code != 200 {
		t.Fatalf("GET /api/status: %d %s", code, body)
	}
	for _, want := range []string{
		`"remedy":"Page the ` + "`on-call`" + ` \u0026 \u003cstop\u003e the loop"`,
		`"remedy":"Read ` + "`last_error`",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/api/status has no %s", want)
		}
	}
}
