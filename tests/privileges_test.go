package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestLeastPrivilege: each grant set can do its job and gets permission
// denied for everything else it must not do.
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	owner := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	execSQL(t, owner, `SELECT webhooks.set_provider('sume', 'sume', ARRAY['sekret'])`)
	id, _ := ingest(t, owner, "sume", "seed", "job.completed", `{"secret_field": "pii"}`)
	suffix := strings.ReplaceAll(conf.Database[len(conf.Database)-8:], "-", "")

	mustDeny := func(t *testing.T, c *pgx.Conn, who, sql string, args ...any) {
		t.Helper()
		_, err := c.Exec(ctx, sql, args...)
		if err == nil || !strings.Contains(err.Error(), "42501") {
			t.Errorf("%s: %s: want permission denied (42501), got %v", who, sql, err)
		}
	}
	mustAllow := func(t *testing.T, c *pgx.Conn, who, sql string, args ...any) {
		t.Helper()
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			t.Errorf("%s: %s: %v", who, sql, err)
		}
	}
	common := []string{
		`SELECT payload FROM webhooks.events`,
		`SELECT * FROM webhooks.provider_secrets`,
		`UPDATE webhooks.events SET status = 'dead'`,
		`DELETE FROM webhooks.events`,
		`INSERT INTO webhooks.tombstones VALUES ('p', 'x', 'r')`,
		`SELECT webhooks.replay(1, 'x')`,
		`SELECT webhooks.replay(ARRAY[1]::bigint[], 'x')`,
		`SELECT webhooks.prune('1 day', '2 days')`,
		`SELECT webhooks.reconcile()`,
		`SELECT webhooks.set_provider('evil', 'sume', ARRAY['x'])`,
		`SELECT webhooks.grant_reader(current_user)`,
		`SELECT webhooks.tombstone('p', 'x', 'r')`,
	}

	t.Run("ingest", func(t *testing.T) {
		c := roleConn(t, conf.URL(), "pginbox_ingest_"+suffix, "grant_ingest")
		mustAllow(t, c, "ingest", `SELECT webhooks.ingest_webhook('sume', 'by_ingest', 'job.completed', '{}')`)
		mustAllow(t, c, "ingest", `SELECT webhooks.expect('sume', 'later', now() + interval '1 hour')`)
		body := `{"job_id": "signed_by_sql", "event": "job.completed"}`
		h := signSume("sekret", body, nowFunc())
		headers := map[string]string{}
		for k := range h {
			headers[k] = h.Get(k)
		}
		mustDeny(t, c, "ingest", `SELECT webhooks.ingest_signed('sume', $1::jsonb, convert_to($2, 'UTF8'))`, headers, body)
		for _, sql := range append(common, `SELECT * FROM webhooks.claim('w')`, `SELECT webhooks.complete(1, 'w', 1)`,
			`SELECT count(*) FROM webhooks.events`, `SELECT * FROM webhooks.check_status`) {
			mustDeny(t, c, "ingest", sql)
		}
	})
	t.Run("ingest_signed", func(t *testing.T) {
		c := roleConn(t, conf.URL(), "pginbox_signed_"+suffix, "grant_ingest_signed")
		body := `{"job_id": "signed_by_sql", "event": "job.completed"}`
		h := signSume("sekret", body, nowFunc())
		headers := map[string]string{}
		for k := range h {
			headers[k] = h.Get(k)
		}
		mustAllow(t, c, "ingest_signed", `SELECT webhooks.ingest_signed('sume', $1::jsonb, convert_to($2, 'UTF8'))`, headers, body)
		for _, sql := range append(common, `SELECT webhooks.ingest_webhook('sume', 'unsigned', 'job.completed', '{}')`,
			`SELECT webhooks.expect('sume', 'later', now() + interval '1 hour')`,
			`SELECT * FROM webhooks.claim('w')`, `SELECT count(*) FROM webhooks.events`) {
			mustDeny(t, c, "ingest_signed", sql)
		}
	})
	t.Run("worker", func(t *testing.T) {
		c := roleConn(t, conf.URL(), "pginbox_worker_"+suffix, "grant_worker")
		var claimed int64
		if err := c.QueryRow(ctx, `SELECT count(*) FROM webhooks.claim('w1', 100)`).Scan(&claimed); err != nil || claimed == 0 {
			t.Fatalf("worker claim: %d, %v", claimed, err)
		}
		mustAllow(t, c, "worker", `SELECT webhooks.complete($1, 'w1', 1)`, id)
		for _, sql := range append(common, `SELECT webhooks.ingest_webhook('p', 'x', 't', '{}')`,
			`SELECT count(*) FROM webhooks.events`, `SELECT * FROM webhooks.check_status`, `SELECT webhooks.run_checks()`) {
			mustDeny(t, c, "worker", sql)
		}
	})
	t.Run("reader", func(t *testing.T) {
		c := roleConn(t, conf.URL(), "pginbox_reader_"+suffix, "grant_reader")
		for _, sql := range []string{
			`SELECT id, provider, external_id, status, last_error FROM webhooks.events`,
			`SELECT * FROM webhooks.check_status`,
			`SELECT * FROM webhooks.traffic_5m`,
			`SELECT * FROM webhooks.reconcile_runs`,
			`SELECT * FROM webhooks.find_gaps()`,
			`SELECT * FROM webhooks.find_sequence_gaps('p', 1, 10)`,
		} {
			mustAllow(t, c, "reader", sql)
		}
		for _, sql := range append(common, `SELECT * FROM webhooks.events`, `SELECT webhooks.ingest_webhook('p', 'x', 't', '{}')`,
			`SELECT * FROM webhooks.claim('w')`, `SELECT webhooks.run_checks()`, `SELECT webhooks.refresh_views()`) {
			mustDeny(t, c, "reader", sql)
		}
	})
	t.Run("no grant", func(t *testing.T) {
		c := roleConn(t, conf.URL(), "pginbox_nobody_"+suffix, "")
		for _, sql := range append(common, `SELECT webhooks.ingest_webhook('p', 'x', 't', '{}')`, `SELECT * FROM webhooks.claim('w')`,
			`SELECT * FROM webhooks.check_status`, `SELECT * FROM webhooks.find_gaps()`) {
			mustDeny(t, c, "nobody", sql)
		}
	})
	if n := queryInt(t, owner, `SELECT count(*) FROM webhooks.events WHERE external_id IN ('by_ingest', 'signed_by_sql')`); n != 2 {
		t.Fatalf("ingest role stored %d of 2 events", n)
	}
	_, err := owner.Exec(ctx, `SELECT webhooks.grant_worker('no_such_role_x')`)
	wantPgError(t, err, "42704", "role 'no_such_role_x' does not exist")
}
