package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/runner"
)

// TestConsoleAuditNamesTheOperator: a replay, a bulk replay, a pause and a
// resume from the console record who asked (how they authenticated and
// from which address) in the audit rows, not the runner's database role,
// which is the same for every operator. A replay outside the console
// (no actor) still records the session's role.
func TestConsoleAuditNamesTheOperator(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	role := queryText(t, pool, `SELECT session_user::text`)
	one := deadEvent(t, pool, "audit_one")
	deadEvent(t, pool, "audit_two")
	cookie := login(t, srv.Admin)
	for _, tc := range []struct {
		name, path, token, body string
		hdr                     map[string]string
		audit                   string
		want                    string
	}{
		{"api replay by token", "/api/events/replay", testAdminToken, `{"ids": [` + itoa64(one) + `], "reason": "by token"}`, nil,
			`SELECT replayed_by FROM webhooks.replays WHERE reason = 'by token'`, "console token from 127.0.0.1"},
		{"bulk replay by session", "/api/events/replay", "", `{"filter": {"external_id": "audit_two"}, "reason": "by session"}`,
			map[string]string{"Cookie": cookie, "Origin": srv.Admin},
			`SELECT replayed_by FROM webhooks.replays WHERE reason = 'by session'`, "console session from 127.0.0.1"},
		{"pause", "/api/providers/sume/pause", testAdminToken, `{"reason": "handler broken"}`, nil,
			`SELECT paused_by || '|' || (SELECT by_role FROM webhooks.provider_pauses WHERE action = 'pause') FROM webhooks.paused_providers`,
			"console token from 127.0.0.1|console token from 127.0.0.1"},
		{"resume", "/api/providers/sume/resume", testAdminToken, `{}`, nil,
			`SELECT by_role FROM webhooks.provider_pauses WHERE action = 'resume'`, "console token from 127.0.0.1"},
	} {
		if code, _, out := adminDo(t, nil, "POST", srv.Admin+tc.path, tc.token, tc.body, tc.hdr); code != 200 {
			t.Fatalf("%s: %d %s", tc.name, code, out)
		}
		got := queryText(t, pool, tc.audit)
		if got != tc.want || strings.Contains(got, role) {
			t.Errorf("%s: the audit names %q, want %q (not the role %q)", tc.name, got, tc.want, role)
		}
	}
	execSQL(t, pool, `SELECT webhooks.replay($1::bigint, 'from psql')`, one)
	if got := queryText(t, pool, `SELECT replayed_by FROM webhooks.replays WHERE reason = 'from psql'`); got != role {
		t.Errorf("a replay without actor records %q, want the session role %q", got, role)
	}
}

// queryText runs a one-value query and returns the value as text.
func queryText(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}
