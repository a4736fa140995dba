package console

import (
	"net/url"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/console/filter"
)

// TestListSQL: one page statement and one counts statement, a branch of
// the queue per status and one of history for processed, each bound to the
// filter's arguments; a status other than processed reads no history.
func TestListSQL(t *testing.T) {
	t.Parallel()
	qs, err := ListSQL(url.Values{"source": {"backfill"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Name != "page" || qs[1].Name != "counts" {
		t.Fatalf("want page and counts, got %+v", qs)
	}
	for _, q := range qs {
		if len(q.Args) != 1 || q.Args[0] != "backfill" {
			t.Errorf("%s: args %v, want [backfill]", q.Name, q.Args)
		}
		if n := strings.Count(q.SQL, "FROM webhooks.inbox AS e WHERE e.status = '"); n != len(filter.Statuses) {
			t.Errorf("%s: %d status branches of the queue, want %d", q.Name, n, len(filter.Statuses))
		}
		if n := strings.Count(q.SQL, "FROM webhooks.history AS e WHERE"); n != 1 {
			t.Errorf("%s: %d branches of history, want 1 (processed)", q.Name, n)
		}
	}
	pending, err := ListSQL(url.Values{"status": {"pending"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range pending {
		if strings.Contains(q.SQL, "webhooks.history") || strings.Count(q.SQL, "e.status = 'pending'") != 1 {
			t.Errorf("%s of pending events: want the queue's pending branch alone, got %s", q.Name, q.SQL)
		}
	}
	if _, err := ListSQL(url.Values{"limit": {"0"}}); err == nil {
		t.Error("limit=0: want an error")
	}
}
