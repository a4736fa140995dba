package console

import (
	"net/url"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/console/filter"
)

// TestListSQL: one page statement and one counts statement, a branch per
// status, each bound to the filter's arguments.
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
		if n := strings.Count(q.SQL, "e.status = '"); n != len(filter.Statuses) {
			t.Errorf("%s: %d status branches, want %d", q.Name, n, len(filter.Statuses))
		}
	}
	if _, err := ListSQL(url.Values{"limit": {"0"}}); err == nil {
		t.Error("limit=0: want an error")
	}
}
