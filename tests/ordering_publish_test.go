package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// lockedRelations is the sorted list of relations of schema webhooks that
// the transaction on c holds a lock on.
func lockedRelations(t *testing.T, ctx context.Context, c *pgx.Conn) []string {
	t.Helper()
	rows, err := c.Query(ctx, `
		SELECT DISTINCT l.relation::regclass::text
		FROM pg_catalog.pg_locks AS l
		JOIN pg_catalog.pg_class AS r ON r.oid = l.relation
		WHERE l.pid = pg_catalog.pg_backend_pid() AND l.locktype = 'relation'
		  AND r.relnamespace = 'webhooks'::regnamespace
		ORDER BY 1`)
	if err != nil {
		t.Fatalf("read pg_locks: %v", err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("read pg_locks: %v", err)
	}
	return got
}

// TestIngestLocksOnlyTheEventsTable: a delivery of a provider without
// ordering locks only the relations of the store it writes (the keys and
// the queue, webhooks.keys and webhooks.inbox, the indexes it reads, the id
// sequence: never a day of history), whether or not other providers are
// ordered: whether a provider is ordered is read from _ordered_providers(),
// a constant, not from webhooks.ordering, which every delivery used to read
// (a statement of its own, with its table and primary key to lock). The call
// runs after eight warm-up calls, on the plans a session keeps.
func TestIngestLocksOnlyTheEventsTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		ordered string // another provider with ordering, or ""
		digest  bool   // the unsigned-key path (body_sha256)
	}{
		{"no provider ordered", "", false},
		{"another provider ordered", "stripe", false},
		{"another provider ordered, unsigned key", "stripe", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conf := NewConfig(t)
			ctx := context.Background()
			c := connect(t, conf.URL())
			if tc.ordered != "" {
				if _, err := c.Exec(ctx, `SELECT webhooks.set_ordering($1, '$.customer')`, tc.ordered); err != nil {
					t.Fatal(err)
				}
			}
			var want []string
			rows, err := c.Query(ctx, `
				SELECT x FROM (SELECT 'webhooks.inbox' AS x UNION ALL SELECT 'webhooks.keys'
				               UNION ALL SELECT 'webhooks.events_id_seq'
				               UNION ALL SELECT i.indexrelid::regclass::text FROM pg_catalog.pg_index AS i
				               WHERE i.indrelid IN ('webhooks.inbox'::regclass, 'webhooks.keys'::regclass)) AS r ORDER BY 1`)
			if err != nil {
				t.Fatal(err)
			}
			if want, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				t.Fatal(err)
			}
			call := func(n int) {
				t.Helper()
				var digest any
				body := fmt.Sprintf(`{"customer":"cus_1","n":%d}`, n)
				if tc.digest {
					digest = []byte(fmt.Sprintf("%032d", n))
				}
				var outcome string
				if err := c.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_webhook('shopify', $1, 't', $2::jsonb, body_sha256 => $3)`,
					fmt.Sprintf("evt_%d", n), body, digest).Scan(&outcome); err != nil || outcome != "created" {
					t.Fatalf("ingest %d: %q, %v", n, outcome, err)
				}
			}
			for n := 1; n <= 8; n++ {
				call(n)
			}
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			call(9)
			got := lockedRelations(t, ctx, c)
			for _, r := range got {
				if !slices.Contains(want, r) {
					t.Errorf("one delivery locked %s; want only the relations of webhooks.keys and webhooks.inbox, got:\n  %s", r, strings.Join(got, "\n  "))
				}
			}
			if !slices.Contains(got, "webhooks.keys") {
				t.Errorf("the delivery's transaction holds no lock on webhooks.keys (got %v): the test reads the wrong session", got)
			}
		})
	}
}

// TestOrderingPublishedToSessions: set_ordering(), clear_ordering() and a
// direct write to webhooks.ordering reach a session that already ingested
// for the provider (its plans cached, generic after five calls) at its next
// transaction; a rolled-back set_ordering() reaches nobody.
func TestOrderingPublishedToSessions(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	ctx := context.Background()
	ingester := connect(t, conf.URL())
	admin := connect(t, conf.URL())
	n := 0
	// ingestKey stores one new event of provider pub for customer cus_1 on
	// the ingester's session and returns its order_key ("" when unordered).
	ingestKey := func() string {
		t.Helper()
		n++
		var id int64
		if err := ingester.QueryRow(ctx, `SELECT event_id FROM webhooks.ingest_webhook('pub', $1, 't', $2::jsonb)`,
			fmt.Sprintf("evt_%d", n), fmt.Sprintf(`{"customer":"cus_1","n":%d}`, n)).Scan(&id); err != nil {
			t.Fatalf("ingest %d: %v", n, err)
		}
		var key *string
		if err := ingester.QueryRow(ctx, `SELECT order_key FROM webhooks.events WHERE id = $1`, id).Scan(&key); err != nil {
			t.Fatalf("read event %d: %v", id, err)
		}
		if key == nil {
			return ""
		}
		return *key
	}
	published := func() []string {
		t.Helper()
		var p []string
		if err := admin.QueryRow(ctx, `SELECT webhooks._ordered_providers()`).Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for range 8 {
		if k := ingestKey(); k != "" {
			t.Fatalf("before set_ordering: order_key %q, want none", k)
		}
	}
	for _, step := range []struct {
		name      string
		sql       string
		wantKey   string
		published []string
	}{
		{"set_ordering", `SELECT webhooks.set_ordering('pub', '$.customer', '$.n')`, "cus_1", []string{"pub"}},
		{"set_ordering of another provider", `SELECT webhooks.set_ordering('a-first', '$.x')`, "cus_1", []string{"a-first", "pub"}},
		{"clear_ordering", `SELECT webhooks.clear_ordering('pub')`, "", []string{"a-first"}},
		{"set_ordering rolled back", `BEGIN; SELECT webhooks.set_ordering('pub', '$.customer'); ROLLBACK`, "", []string{"a-first"}},
		{"direct insert", `INSERT INTO webhooks.ordering (provider, key_path) VALUES ('pub', '$.customer')`, "cus_1", []string{"a-first", "pub"}},
		{"direct delete", `DELETE FROM webhooks.ordering WHERE provider = 'pub'`, "", []string{"a-first"}},
		{"a provider name that needs quoting", `SELECT webhooks.set_ordering('it''s $body$ "x"', '$.x')`, "", []string{"a-first", `it's $body$ "x"`}},
		{"truncate", `TRUNCATE webhooks.ordering`, "", []string{}},
	} {
		if _, err := admin.Exec(ctx, step.sql); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if p := published(); !slices.Equal(p, step.published) {
			t.Errorf("%s: _ordered_providers() = %v, want %v", step.name, p, step.published)
		}
		if k := ingestKey(); k != step.wantKey {
			t.Errorf("%s: the next delivery's order_key = %q, want %q", step.name, k, step.wantKey)
		}
	}
}

// TestOrderingPublishUnderRepeatableRead: a set_ordering() in a REPEATABLE
// READ transaction whose snapshot predates another provider's
// set_ordering() still publishes both: the trigger applies its own change
// to the list published last, not to the rows its snapshot shows.
func TestOrderingPublishUnderRepeatableRead(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	ctx := context.Background()
	a := connect(t, conf.URL())
	b := connect(t, conf.URL())
	tx, err := a.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhooks.ordering`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("snapshot: %d providers, %v", n, err)
	}
	if _, err := b.Exec(ctx, `SELECT webhooks.set_ordering('github', '$.repository.id')`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT webhooks.set_ordering('stripe', '$.data.object.customer')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := b.QueryRow(ctx, `SELECT webhooks._ordered_providers()`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := []string{"github", "stripe"}; !slices.Equal(got, want) {
		t.Errorf("_ordered_providers() = %v, want %v", got, want)
	}
}
