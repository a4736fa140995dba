package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// runImport runs `pginbox import` args with stdin and DATABASE_URL=url and
// returns the exit code, stdout and stderr.
func runImport(t *testing.T, url, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := App{Stdout: &out, Stderr: &errOut, Stdin: strings.NewReader(stdin),
		Getenv: func(k string) string { return map[string]string{"DATABASE_URL": url}[k] }}
	code := Run(context.Background(), app, append([]string{"import"}, args...))
	return code, out.String(), errOut.String()
}

// jsonlFile writes lines to a file of t's and returns its path.
func jsonlFile(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// countKeys is how many keys provider has in webhooks.keys.
func countKeys(t *testing.T, pool *pgxpool.Pool, provider string) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM webhooks.keys WHERE provider = $1`, provider).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestImportCommand: `pginbox import FILE --provider NAME` streams the
// file through import_events in calls of --batch lines, with a progress
// line on stderr after each and the totals on stdout; blank lines are
// skipped, a key repeated or already stored is a duplicate, - reads stdin,
// and importing the file again imports nothing.
func TestImportCommand(t *testing.T) {
	t.Parallel()
	url := pgtest.NewConfig(t).URL()
	pool := pgtest.PoolFor(t, url, 2)
	file := jsonlFile(t,
		`{"external_id": "a", "event_type": "job.completed", "received_at": "2024-05-01T12:00:00Z", "payload": {"n": 1}}`,
		``,
		`{"external_id": "b", "event_type": "job.failed", "received_at": "2024-05-02T12:00:00+02:00"}`,
		`  {"external_id": "a", "event_type": "job.completed", "received_at": "2024-05-01T12:00:00Z"}  `,
		`{"external_id": "c", "event_type": "job.completed", "received_at": "2023-01-31T23:59:59.5-01:00", "payload": null}`,
	)
	code, out, errOut := runImport(t, url, "", file, "--provider", "old", "--batch", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != "imported 3, duplicates 1, lines 5\n" {
		t.Errorf("stdout %q", out)
	}
	wantErr := "pginbox import: imported 2, duplicates 0, lines 3\npginbox import: imported 3, duplicates 1, lines 5\n"
	if errOut != wantErr {
		t.Errorf("stderr %q, want %q", errOut, wantErr)
	}
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM webhooks.events WHERE provider = 'old'
		AND status = 'processed' AND source = 'import' AND processed_at = received_at
		AND ((external_id = 'a' AND received_at = '2024-05-01 12:00:00+00' AND payload = '{"n": 1}')
		  OR (external_id = 'b' AND received_at = '2024-05-02 10:00:00+00' AND payload IS NULL)
		  OR (external_id = 'c' AND received_at = '2023-02-01 00:59:59.5+00' AND payload IS NULL))`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d of the 3 events stored as imported (%v)", n, err)
	}

	code, out, errOut = runImport(t, url, "", "--provider", "old", file)
	if code != 0 || out != "imported 0, duplicates 4, lines 5\n" {
		t.Fatalf("again: exit %d, stdout %q, stderr %q; want everything a duplicate", code, out, errOut)
	}

	stdin := `{"external_id": "d", "event_type": "t", "received_at": "2024-05-01T00:00:00Z"}` + "\n" +
		`{"external_id": "a", "event_type": "t", "received_at": "2024-05-01T00:00:00Z"}`
	code, out, errOut = runImport(t, url, stdin, "-", "--provider", "old")
	if code != 0 || out != "imported 1, duplicates 1, lines 2\n" || errOut != "pginbox import: imported 1, duplicates 1, lines 2\n" {
		t.Fatalf("stdin: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := countKeys(t, pool, "old"); n != 4 {
		t.Errorf("%d keys, want 4", n)
	}
}

// TestImportCommandStopsAtABadLine: the first bad line stops the import
// with exit 1 and one line naming it and what was imported before it: the
// calls before the one the server refused (import_events' index mapped
// back to the file's line), and for a line that is not JSON every line
// before it.
func TestImportCommandStopsAtABadLine(t *testing.T) {
	t.Parallel()
	url := pgtest.NewConfig(t).URL()
	pool := pgtest.PoolFor(t, url, 2)
	good := func(id string) string {
		return `{"external_id": "` + id + `", "event_type": "t", "received_at": "2024-05-01T00:00:00Z"}`
	}
	cases := []struct {
		name  string
		lines []string
		want  string
		keys  int64
	}{
		{"refused by import_events",
			[]string{good("1"), good("2"), "", good("4"), good("5"), `{"external_id": "6", "event_type": "t"}`, good("7")},
			"pginbox: import events.jsonl: line 6: received_at is missing; lines 1 to 4 were imported (imported 3, duplicates 0), none from line 5 on; run it again once fixed: imported lines count as duplicates\n",
			3},
		{"not JSON",
			[]string{good("1"), good("1"), `{"external_id": "3",`, good("4")},
			"pginbox: import events.jsonl: line 3: not a JSON value; lines 1 to 2 were imported (imported 1, duplicates 1), none from line 3 on; run it again once fixed: imported lines count as duplicates\n",
			1},
		{"the first line",
			[]string{`[1, 2]`, good("2")},
			"pginbox: import events.jsonl: line 1: is a JSON array, not an object; no line was imported, none from line 1 on; run it again once fixed: imported lines count as duplicates\n",
			0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			provider := strings.ReplaceAll(tc.name, " ", "_")
			dir := t.TempDir()
			file := filepath.Join(dir, "events.jsonl")
			if err := os.WriteFile(file, []byte(strings.Join(tc.lines, "\n")), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			app := App{Stdout: &out, Stderr: &errOut,
				Getenv: func(k string) string { return map[string]string{"DATABASE_URL": url}[k] }}
			code := Run(context.Background(), app, []string{"import", file, "--provider", provider, "--batch", "3"})
			if code != 1 {
				t.Fatalf("exit %d, want 1 (stderr %q)", code, errOut.String())
			}
			lines := strings.Split(errOut.String(), "\n")
			last := lines[len(lines)-2] + "\n"
			if want := strings.Replace(tc.want, "events.jsonl", file, 1); last != want {
				t.Errorf("last stderr line\n %q\nwant\n %q", last, want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
			if n := countKeys(t, pool, provider); n != tc.keys {
				t.Errorf("%d keys stored, want %d", n, tc.keys)
			}
		})
	}
}

// TestImportCommandUsage: a command line import cannot run is a usage
// error (exit 2) naming what is missing, before any database is reached;
// a file that cannot be opened exits 1; without DATABASE_URL, a data folder
// without a cluster exits 1 and is left as it was (no cluster created).
func TestImportCommandUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := jsonlFile(t, `{"external_id": "a", "event_type": "t", "received_at": "2024-05-01T00:00:00Z"}`)
	var out, errOut bytes.Buffer
	app := App{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	code := Run(context.Background(), app, []string{"import", file, "--provider", "p", "--data-dir", filepath.Join(dir, "db")})
	if code != 1 || !strings.HasPrefix(errOut.String(), "pginbox: no database: DATABASE_URL is unset") {
		t.Errorf("import without a database: exit %d, stderr %q; want 1 and no database", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "db")); !os.IsNotExist(err) {
		t.Errorf("import created %s (stat: %v)", filepath.Join(dir, "db"), err)
	}

	url := "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "pginbox: usage: import needs a file (- for stdin)"},
		{[]string{"f.jsonl"}, 2, "pginbox: usage: import needs --provider"},
		{[]string{"f.jsonl", "--provider", " "}, 2, "pginbox: usage: import needs --provider"},
		{[]string{"f.jsonl", "g.jsonl", "--provider", "p"}, 2, "pginbox: usage: import takes one file"},
		{[]string{"f.jsonl", "--provider", "p", "--batch", "0"}, 2, "pginbox: usage: --batch must be between 1 and 10000, got 0"},
		{[]string{"f.jsonl", "--provider", "p", "--batch", "10001"}, 2, "--batch must be between 1 and 10000, got 10001"},
		{[]string{filepath.Join(t.TempDir(), "missing.jsonl"), "--provider", "p"}, 1, "missing.jsonl: no such file or directory"},
	} {
		code, out, errOut := runImport(t, url, "", tc.args...)
		if code != tc.code || out != "" || !strings.HasPrefix(errOut, "pginbox: ") || !strings.Contains(strings.SplitN(errOut, "\n", 2)[0], tc.want) {
			t.Errorf("import %q: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
		if tc.code == 2 && !strings.Contains(errOut, "usage: pginbox import FILE.jsonl --provider NAME [--batch N]") {
			t.Errorf("import %q: stderr %q does not show import's usage line", tc.args, errOut)
		}
	}
}
