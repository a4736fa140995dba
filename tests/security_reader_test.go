package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/status"
)

// readerHidden is every column of schema webhooks a grant_reader role may
// not select, by relation: the payload and its digest, the values ordered
// processing copies from payloads (at the provider's key_path and
// order_path), a status_url (it may carry a presigned token) and a
// contradiction's detail (it quotes payload fields). docs/reference.md's
// grants table names each of them.
var readerHidden = map[string][]string{
	"events":            {"payload", "body_sha256", "order_key", "order_num", "order_text"},
	"order_marks":       {"order_key", "order_num", "order_text", "prior_num", "prior_text"},
	"blocked_sequences": {"sequence_key"},
	"expectations":      {"status_url"},
	"contradictions":    {"detail"},
}

// TestReaderSeesNoPayloadValues: with a provider ordered by customer e-mail
// and an order value taken from the payload, events processed (so
// order_marks holds marks and prior marks) and a sequence blocked, a
// grant_reader role gets permission denied for every column that holds a
// value copied from a payload, and no value it can select anywhere in the
// schema (every table, view and materialized view, each column it may read,
// and find_gaps) holds one of those values. It still reads the rest of
// those relations, and `pginbox ordering` (status.ReadOrdering) works for it
// with the sequence keys hidden. docs/reference.md names each hidden column.
func TestReaderSeesNoPayloadValues(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	owner := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	// The values a reader must never read: sequence keys (e-mails) and order
	// values, a number and a text.
	secrets := []string{"alice@example.com", "bob@example.org", "731904.25", "731905.5", "ord-9f2e"}
	execSQL(t, owner, `SELECT webhooks.set_ordering('shop', '$.customer', '$.seq')`)
	a1, _ := ingest(t, owner, "shop", "o1", "order.paid", `{"customer": "alice@example.com", "seq": 731904.25}`)
	a2, _ := ingest(t, owner, "shop", "o2", "order.paid", `{"customer": "alice@example.com", "seq": 731905.5}`)
	b1, _ := ingest(t, owner, "shop", "o3", "order.paid", `{"customer": "bob@example.org", "seq": "ord-9f2e"}`)
	ingest(t, owner, "shop", "o4", "order.paid", `{"customer": "bob@example.org", "seq": "ord-9f2f"}`)
	// alice: a1 then (in another transaction) a2 processed, so her mark
	// holds a2's place and a prior one; bob: his head fails, his sequence
	// blocks.
	byID := map[int64]claimed{}
	for _, c := range claim(t, owner, "w", 10, "1 minute") {
		byID[c.ID] = c
	}
	if len(byID) != 2 || byID[a1].ID == 0 || byID[b1].ID == 0 {
		t.Fatalf("claimed %v, want the heads %d and %d", byID, a1, b1)
	}
	execSQL(t, owner, `SELECT webhooks.complete($1, 'w', $2)`, a1, byID[a1].Attempts)
	execSQL(t, owner, `SELECT webhooks.fail($1, 'w', $2, 'handler: no such order')`, b1, byID[b1].Attempts)
	if c := claim(t, owner, "w", 10, "1 minute"); len(c) != 1 || c[0].ID != a2 {
		t.Fatalf("claimed %v, want %d alone", c, a2)
	} else {
		execSQL(t, owner, `SELECT webhooks.complete($1, 'w', $2)`, a2, c[0].Attempts)
	}
	if n := queryInt(t, owner, `SELECT count(*) FROM webhooks.order_marks WHERE prior_num = 731904.25`); n != 1 {
		t.Fatalf("order_marks: %d marks with a prior place, want 1", n)
	}
	if n := queryInt(t, owner, `SELECT count(*) FROM webhooks.blocked_sequences WHERE sequence_key = 'bob@example.org'`); n != 1 {
		t.Fatalf("blocked_sequences: %d rows for bob, want 1", n)
	}
	execSQL(t, owner, `SELECT webhooks.refresh_views()`)
	execSQL(t, owner, `SELECT * FROM webhooks.run_checks()`)

	_, reader := newGrantedRole(t, conf, conf.Database, "pginbox_rpv_", "grant_reader")
	for rel, cols := range readerHidden {
		for _, col := range cols {
			_, err := reader.Exec(ctx, fmt.Sprintf(`SELECT %s FROM webhooks.%s`, col, rel))
			if err == nil || !strings.Contains(err.Error(), "42501") {
				t.Errorf("reader: SELECT %s FROM webhooks.%s: want permission denied (42501), got %v", col, rel, err)
			}
		}
	}
	for _, tc := range []struct {
		sql  string
		want int64
	}{
		{`SELECT count(*) FROM (SELECT id, provider, external_id, status, order_held, out_of_order FROM webhooks.events) AS x`, 4},
		{`SELECT count(*) FROM (SELECT provider, event_id, received_at, marked_at, prior_id FROM webhooks.order_marks) AS x`, 1},
		{`SELECT count(*) FROM (SELECT provider, head_event_id, head_status, waiting FROM webhooks.blocked_sequences) AS x`, 1},
	} {
		var n int64
		if err := reader.QueryRow(ctx, tc.sql).Scan(&n); err != nil || n != tc.want {
			t.Errorf("reader: %s = %d, %v; want %d", tc.sql, n, err, tc.want)
		}
	}

	// Everything the reader may select, column by column: none of it holds
	// a value copied from the payloads.
	seen := readerSweep(t, ctx, reader, secrets)
	for _, rel := range []string{"events", "order_marks", "blocked_sequences", "ordering", "payload_15m", "check_results"} {
		if seen[rel] == 0 {
			t.Errorf("the sweep read no row of webhooks.%s: it proves nothing there", rel)
		}
	}

	// pginbox ordering, as the reader: the blocked sequence, its key hidden.
	st, err := status.ReadOrdering(ctx, reader, "", 10)
	if err != nil {
		t.Fatalf("status.ReadOrdering as a reader: %v", err)
	}
	if len(st.Blocked) != 1 || st.Blocked[0].HeadID != b1 || st.Blocked[0].Key != nil {
		t.Errorf("status.ReadOrdering as a reader: blocked %+v, want head %d with no key", st.Blocked, b1)
	}
	if st, err := status.ReadOrdering(ctx, owner, "", 10); err != nil || len(st.Blocked) != 1 || st.Blocked[0].Key == nil || *st.Blocked[0].Key != "bob@example.org" {
		t.Errorf("status.ReadOrdering as the owner: %+v, %v; want bob@example.org's sequence", st.Blocked, err)
	}

	// The docs' grants table names every hidden column.
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	grants := string(doc)
	if i := strings.Index(grants, "### Least privilege"); i < 0 {
		t.Fatal("docs/reference.md has no section \"### Least privilege\"")
	} else {
		grants = grants[i:]
	}
	for rel, cols := range readerHidden {
		for _, col := range cols {
			if name := "`" + rel + "." + col + "`"; !strings.Contains(grants, name) {
				t.Errorf("docs/reference.md, Least privilege: does not name %s among what a reader cannot read", name)
			}
		}
	}
}

// readerSweep selects, as the reader, every column it may select of every
// table, view and materialized view of schema webhooks, and the rows of
// find_gaps(), and fails t where a value holds one of secrets. It returns
// how many rows it read per relation.
func readerSweep(t *testing.T, ctx context.Context, reader *pgxpool.Pool, secrets []string) map[string]int {
	t.Helper()
	rows, err := reader.Query(ctx, `
		SELECT c.relname, string_agg(pg_catalog.format('coalesce(%I::text, '''')', a.attname), ' || '' | '' || ' ORDER BY a.attnum)
		FROM pg_catalog.pg_class AS c
		JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		WHERE c.relnamespace = 'webhooks'::regnamespace
		  AND c.relkind IN ('r', 'v', 'm')
		  AND pg_catalog.has_column_privilege(c.oid, a.attnum, 'SELECT')
		GROUP BY c.relname
		ORDER BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	type rel struct{ Name, Expr string }
	rels, err := pgx.CollectRows(rows, pgx.RowToStructByPos[rel])
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) < 20 {
		t.Fatalf("the reader may read only %d relations: is it a reader?", len(rels))
	}
	queries := map[string]string{"find_gaps()": `SELECT concat_ws(' | ', g.*) FROM webhooks.find_gaps() AS g`}
	for _, r := range rels {
		queries[r.Name] = fmt.Sprintf(`SELECT %s FROM webhooks.%s`, r.Expr, pgx.Identifier{r.Name}.Sanitize())
	}
	seen := map[string]int{}
	for name, sql := range queries {
		rows, err := reader.Query(ctx, sql)
		if err != nil {
			t.Errorf("reader: %s: %v", name, err)
			continue
		}
		values, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Errorf("reader: %s: %v", name, err)
			continue
		}
		seen[name] = len(values)
		for _, v := range values {
			for _, s := range secrets {
				if strings.Contains(v, s) {
					t.Errorf("reader reads %q, a value from a payload, in webhooks.%s: %s", s, name, v)
				}
			}
		}
	}
	return seen
}
