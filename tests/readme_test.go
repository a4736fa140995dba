package tests

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeSQL returns the first ```sql block of README.md after the line that
// starts with marker.
func readmeSQL(t *testing.T, marker string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, "\n"+marker)
	if i < 0 {
		t.Fatalf("README.md has no paragraph starting %q", marker)
	}
	s = s[i:]
	start := strings.Index(s, "```sql\n")
	if start < 0 {
		t.Fatalf("README.md has no sql block after %q", marker)
	}
	s = s[start+len("```sql\n"):]
	end := strings.Index(s, "```")
	if end < 0 {
		t.Fatalf("README.md's sql block after %q is not closed", marker)
	}
	return s[:end]
}

// runPsql runs script on url with psql, stopping at the first error, and
// returns what it printed.
func runPsql(t *testing.T, url, script string) string {
	t.Helper()
	psql := needPsql(t)
	cmd, stderr, wait := startProcess(t, time.Minute, psql, "-X", "-v", "ON_ERROR_STOP=1", "-d", url)
	var stdout bytes.Buffer
	cmd.Stdin = strings.NewReader(script)
	cmd.Stdout = &stdout
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("psql: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, stdout.String(), stderr.String())
	}
	return stdout.String()
}

const readmeHandlerMarker = "**With a SQL handler.**"

// TestReadmeHandlerSurvivesReplay runs the README's SQL handler the way
// `pginbox serve` does (claim, then process_batch), replays the event as an
// operator would from the console, and runs it again: the replay must
// succeed and change nothing. The handler also writes only Stripe's events:
// another provider's event of the same type pays nothing.
func TestReadmeHandlerSurvivesReplay(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	runPsql(t, conf.URL(), readmeSQL(t, readmeHandlerMarker))

	id, _ := ingest(t, pool, "stripe", "evt_1", "payment_intent.succeeded", `{"id": "evt_1", "data": {"object": {"amount": 2000}}}`)
	ingest(t, pool, "shop", "evt_2", "payment_intent.succeeded", `{"id": "evt_2", "data": {"object": {"amount": 5}}}`)

	run := func(round string) {
		t.Helper()
		c := claim(t, pool, "w", 10, "5 minutes")
		if len(c) == 0 {
			t.Fatalf("%s: nothing to claim", round)
		}
		ids, attempts := fences(c)
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.process_batch('app.handle_event(webhooks.events)', 'w', $1, $2)
			WHERE outcome = 'processed'`, ids, attempts); n != int64(len(c)) {
			var lastErr string
			_ = pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(last_error, '; '), '') FROM webhooks.events`).Scan(&lastErr)
			t.Fatalf("%s: %d of %d events processed; last_error: %s", round, n, len(c), lastErr)
		}
	}
	run("first run")
	execSQL(t, pool, `SELECT webhooks.replay($1::bigint, 'operator replays a processed payment')`, id)
	run("after the replay")

	if s := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`); s != 2 {
		t.Errorf("processed events: %d, want 2", s)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.payments WHERE event_id = 'evt_1' AND amount = 2000`); n != 1 {
		t.Errorf("payments for evt_1: %d, want 1", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.payments`); n != 1 {
		t.Errorf("payments: %d, want 1 (another provider's event of the same type pays nothing)", n)
	}
}

// TestReadmeClaimComplete runs the README's claim/complete block with psql
// right after its handler block, as a reader pastes them: the claimed
// event is handled and completed with what claim() returned.
func TestReadmeClaimComplete(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	runPsql(t, conf.URL(), readmeSQL(t, readmeHandlerMarker))
	ingest(t, pool, "stripe", "evt_1", "payment_intent.succeeded", `{"id": "evt_1", "data": {"object": {"amount": 2000}}}`)

	out := runPsql(t, conf.URL(), readmeSQL(t, "**From any stack, with `claim` and `complete`.**"))
	if !strings.Contains(out, " t\n") {
		t.Errorf("complete() did not print true:\n%s", out)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'evt_1' AND status = 'processed'`); n != 1 {
		t.Errorf("evt_1 is not processed:\n%s", out)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.payments WHERE event_id = 'evt_1' AND amount = 2000`); n != 1 {
		t.Errorf("payments for evt_1: %d, want 1", n)
	}
}
