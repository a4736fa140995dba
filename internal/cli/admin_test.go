package cli

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/pgtest"
)

func adminDB(t *testing.T) (map[string]string, *pgxpool.Pool) {
	t.Helper()
	conf := pgtest.NewConfig(t)
	pool := pgtest.PoolFor(t, conf.URL(), 2)
	return map[string]string{"DATABASE_URL": conf.URL()}, pool
}

func TestChecksCommand(t *testing.T) {
	t.Parallel()
	env, pool := adminDB(t)
	code, out, errOut := runCLI(t, env, "checks")
	if code != 0 || !strings.Contains(out, ", 0 breached") {
		t.Fatalf("healthy: exit %d\n%s%s", code, out, errOut)
	}
	// A dead event is a breach: exit 1 naming it.
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, last_error, attempts)
		VALUES ('p', 'x', 't', '{}', 'dead', 'boom', 1)`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, env, "checks")
	if code != 1 || !strings.Contains(out, "BREACH") || !strings.Contains(errOut, "pginbox: checks breached: ") {
		t.Fatalf("breach: exit %d\n%s%s", code, out, errOut)
	}
}

func TestReplayCommand(t *testing.T) {
	t.Parallel()
	env, pool := adminDB(t)
	var id int64
	if err := pool.QueryRow(context.Background(), `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, last_error, attempts)
		VALUES ('p', 'x', 't', '{}', 'dead', 'boom', 1) RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	idArg := strconv.FormatInt(id, 10)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"replay", idArg}, 2, "replay needs --reason"},
		{[]string{"replay", "abc", "--reason", "x"}, 2, `"abc" is not an event id`},
		{[]string{"replay", "999999", "--reason", "x"}, 1, "no event with id 999999"},
		{[]string{"replay", idArg, "--reason", "handler fixed"}, 0, ""},
	} {
		code, _, errOut := runCLI(t, env, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Fatalf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
	var n int
	_ = pool.QueryRow(context.Background(), `SELECT count(*) FROM webhooks.replays WHERE event_id = $1 AND reason = 'handler fixed'`, id).Scan(&n)
	if n != 1 {
		t.Fatal("replay not audited")
	}
}

func TestPruneCommand(t *testing.T) {
	t.Parallel()
	env, pool := adminDB(t)
	if _, err := pool.Exec(context.Background(), `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at, received_at)
		VALUES ('p', 'old', 't', '{}', 'processed', now(), now() - interval '40 days')`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, env, "prune")
	if code != 0 || !strings.Contains(out, "pruned 1 payloads and deleted 0 events") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, env, "prune", "--keep-payload", "10d", "--keep-keys", "5d")
	if code != 1 || !strings.Contains(errOut, "must be longer") {
		t.Fatalf("bad retention: exit %d %q", code, errOut)
	}
}
