package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestSecurityUpgradeKeepsGrants migrates a database to the version before
// the security migrations, gives roles the old grant sets, then migrates the
// rest: the ingest role can still call ingest_webhook and ingest_signed under
// their new signatures, and the reader loses expectations.status_url and
// contradictions.detail but keeps find_gaps (status_url NULL), and can read
// the tables and views added since, without the payload or any value copied
// from it (readerHidden).
func TestSecurityUpgradeKeepsGrants(t *testing.T) {
	t.Parallel()
	db, conf := emptyDB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA webhooks`); err != nil {
		t.Fatal(err)
	}
	// The first migration that knows body_sha256 starts the security changes;
	// found by content, so renumbering the files changes nothing here.
	p := migrateToBefore(t, db, "body_sha256")

	suffix := strings.ReplaceAll(conf.Database[len(conf.Database)-8:], "-", "")
	roles := map[string]string{}
	for grant, role := range map[string]string{"grant_ingest": "pginbox_upi_" + suffix, "grant_reader": "pginbox_upr_" + suffix} {
		roles[grant] = newRole(t, conf.URL(), role, grant)
	}
	// A dashboard role an operator gave two columns of events: not a reader.
	dashboard := newRole(t, conf.URL(), "pginbox_upd_"+suffix, "")
	if _, err := db.ExecContext(ctx, `GRANT USAGE ON SCHEMA webhooks TO `+pgx.Identifier{"pginbox_upd_" + suffix}.Sanitize()+`;
		GRANT SELECT (id, status) ON webhooks.events TO `+pgx.Identifier{"pginbox_upd_" + suffix}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO webhooks.expectations (provider, external_id, deadline, status_url)
		VALUES ('sume', 'g1', now() - interval '1 hour', 'https://api.sume.dev/s?token=presigned')`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}

	as := func(roleURL string) *pgx.Conn {
		c, err := pgx.Connect(ctx, roleURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	ing := as(roles["grant_ingest"])
	if _, err := ing.Exec(ctx, `SELECT webhooks.ingest_webhook('p', 'k', 't', '{}')`); err != nil {
		t.Errorf("ingest role after upgrade: ingest_webhook: %v", err)
	}
	_, err := ing.Exec(ctx, `SELECT webhooks.ingest_signed('nobody', '{}', ''::bytea)`)
	wantPgError(t, err, "42704", "unknown provider") // executable, refused for the provider

	rdr := as(roles["grant_reader"])
	for _, sql := range []string{`SELECT status_url FROM webhooks.expectations`, `SELECT detail FROM webhooks.contradictions`} {
		_, err := rdr.Exec(ctx, sql)
		wantPgError(t, err, "42501", "permission denied")
	}
	var url *string
	if err := rdr.QueryRow(ctx, `SELECT status_url FROM webhooks.find_gaps()`).Scan(&url); err != nil || url != nil {
		t.Fatalf("reader after upgrade: find_gaps status_url = %v, %v; want NULL", url, err)
	}
	// The tables and views added since the reader was granted are readable
	// without running grant_reader again; the payload still is not, nor any
	// value ordered processing copies from it.
	for _, sql := range []string{
		`SELECT * FROM webhooks.backfill_checkpoints`, `SELECT * FROM webhooks.event_errors`,
		`SELECT * FROM webhooks.paused_providers`, `SELECT * FROM webhooks.provider_pauses`,
		`SELECT * FROM webhooks.ordering`, `SELECT * FROM webhooks.out_of_order_pruned`,
		`SELECT * FROM webhooks.alerts`, `SELECT * FROM webhooks.alert_state`,
		`SELECT id, order_held, out_of_order FROM webhooks.events`,
		`SELECT provider, event_id, marked_at, prior_id FROM webhooks.order_marks`,
		`SELECT provider, head_event_id, waiting FROM webhooks.blocked_sequences`,
		`SELECT * FROM webhooks.order_skipped`, `SELECT * FROM webhooks.provider_kinds`,
		`SELECT * FROM webhooks.alert_receivers`, `SELECT * FROM webhooks.ed25519_key_tables`,
	} {
		if _, err := rdr.Exec(ctx, sql+` LIMIT 1`); err != nil {
			t.Errorf("reader after upgrade: %s: %v", sql, err)
		}
	}
	for rel, cols := range readerHidden {
		for _, col := range cols {
			_, err = rdr.Exec(ctx, `SELECT `+col+` FROM webhooks.`+rel)
			if err == nil || !strings.Contains(err.Error(), "42501") {
				t.Errorf("reader after upgrade: SELECT %s FROM webhooks.%s: want permission denied (42501), got %v", col, rel, err)
			}
		}
	}
	dash := as(dashboard)
	_, err = dash.Exec(ctx, `SELECT * FROM webhooks.event_errors LIMIT 1`)
	wantPgError(t, err, "42501", "permission denied") // the upgrade gave it nothing
}
