package tests

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestOrderingWarnsOnUnknownProvider: set_ordering() on a name under which
// no event is stored and no signing secret is set (the docs' own
// set_ordering('stripe', ...) copied on a runner configured with
// PGINBOX_PROVIDERS=payments=stripe) raises a WARNING that names it and says
// events are picked by the name in /webhooks/{provider}, not by the kind;
// it stores the settings all the same, and says so again when called again
// with them. A name with stored events, or with secrets but no event yet,
// draws no warning. Before, every such call succeeded in silence.
func TestOrderingWarnsOnUnknownProvider(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 1)
	ingest(t, pool, "payments", "evt_1", "invoice.paid", `{"customer": "cus_1"}`)
	execSQL(t, pool, `SELECT webhooks.set_provider('billing', 'stripe', ARRAY['whsec_test'])`)

	cfg, err := pgx.ParseConfig(conf.URL())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []*pgconn.Notice
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
	}
	ctx := context.Background()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })

	for _, tc := range []struct {
		name, provider string
		warn           bool
	}{
		{"a kind, not a provider name", "stripe", true},
		{"the same call again", "stripe", true},
		{"a provider with events", "payments", false},
		{"a provider with secrets and no event yet", "billing", false},
	} {
		mu.Lock()
		got = nil
		mu.Unlock()
		if _, err := c.Exec(ctx, `SELECT webhooks.set_ordering($1, '$.customer')`, tc.provider); err != nil {
			t.Fatalf("%s: set_ordering(%s): %v", tc.name, tc.provider, err)
		}
		mu.Lock()
		notices := got
		mu.Unlock()
		if !tc.warn {
			if len(notices) != 0 {
				t.Errorf("%s: set_ordering(%s) sent %d notices (%s: %s), want none", tc.name, tc.provider,
					len(notices), notices[0].Severity, notices[0].Message)
			}
			continue
		}
		if len(notices) != 1 {
			t.Fatalf("%s: set_ordering(%s) sent %d notices, want 1 WARNING", tc.name, tc.provider, len(notices))
		}
		n := notices[0]
		text := n.Message + "\n" + n.Detail + "\n" + n.Hint
		if n.Severity != "WARNING" || !strings.Contains(n.Message, "'"+tc.provider+"'") ||
			!strings.Contains(n.Detail, "/webhooks/{provider}") || !strings.Contains(n.Detail, "not by their kind") ||
			!strings.Contains(n.Hint, "webhooks.clear_ordering('"+tc.provider+"')") {
			t.Errorf("%s: %s %s, want a WARNING naming %q, the name in /webhooks/{provider} and clear_ordering", tc.name,
				n.Severity, text, tc.provider)
		}
	}
	// The warning changes nothing: every call stored its settings.
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.ordering WHERE provider IN ('stripe', 'payments', 'billing')
		AND key_path = '$.customer'`); n != 3 {
		t.Fatalf("%d of the 3 orderings stored", n)
	}
}

// TestPlanSetOrderingProbe: the probe behind that warning reads the unique
// key (provider, external_id), never webhooks.events in physical order, on
// a table of 20,000 events of one provider followed by 20,000 of "late":
// for a name never seen and for "late". A plain EXISTS on the provider was
// planned as a Seq Scan for "late" (half the table matches, so the first
// match looks two rows away; it is 20,000 rows away). The plans are the
// function's own statements', as auto_explain logs them.
func TestPlanSetOrderingProbe(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at)
		SELECT 'busy', 'e' || i, 't', '{}', 'processed', now() FROM generate_series(1, 20000) AS i`)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at)
		SELECT 'late', 'e' || i, 't', '{}', 'processed', now() FROM generate_series(1, 20000) AS i`)
	execSQL(t, pool, `ANALYZE webhooks.inbox, webhooks.keys`)

	c, notes := noticeConnURL(t, SuperuserURL(t, conf.Database), `LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`, `SET client_min_messages = log`)
	for _, provider := range []string{"never-seen", "late"} {
		seen := len(notes())
		if _, err := c.Exec(ctx, `SELECT webhooks.set_ordering($1, '$.customer')`, provider); err != nil {
			t.Fatalf("set_ordering(%s): %v", provider, err)
		}
		var probe string
		for _, n := range notes()[seen:] {
			if strings.Contains(n, "first_event") && strings.Contains(n, "Plan") {
				probe = n
			}
		}
		if probe == "" {
			t.Fatalf("set_ordering(%s): auto_explain logged no plan of the probe:\n%s", provider, strings.Join(notes()[seen:], "\n"))
		}
		if !strings.Contains(probe, "keys_pkey") || strings.Contains(probe, "Seq Scan on keys") {
			t.Errorf("set_ordering(%s): the probe does not read the unique key alone:\n%s", provider, probe)
		}
	}
}
