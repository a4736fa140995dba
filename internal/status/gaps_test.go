package status_test

import (
	"context"
	"testing"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/status"
)

// TestFindGaps: a gap is an expectation past its deadline with no event and
// no tombstone, oldest deadline first, of one provider or of all, at most
// limit of them, with its status URL.
func TestFindGaps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 2)
	pgtest.Exec(t, pool, `SELECT webhooks.expect('p', 'a', now() - interval '1 hour', 'https://api.example/jobs/a')`)
	pgtest.Exec(t, pool, `SELECT webhooks.expect('p', 'b', now() - interval '2 hours')`)
	pgtest.Exec(t, pool, `SELECT webhooks.expect('q', 'c', now() - interval '30 minutes')`)
	pgtest.Exec(t, pool, `SELECT webhooks.expect('p', 'due', now() + interval '1 hour')`)   // not late yet
	pgtest.Exec(t, pool, `SELECT webhooks.expect('p', 'came', now() - interval '3 hours')`) // its event arrived
	pgtest.Exec(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload) VALUES ('p', 'came', 't', '{}')`)
	pgtest.Exec(t, pool, `SELECT webhooks.expect('p', 'gone', now() - interval '4 hours')`) // tombstoned
	pgtest.Exec(t, pool, `INSERT INTO webhooks.tombstones (provider, external_id, reason) VALUES ('p', 'gone', 'test')`)

	for _, tc := range []struct {
		name     string
		provider string
		limit    int
		want     []string
	}{
		{name: "all providers", want: []string{"p/b", "p/a", "q/c"}},
		{name: "one provider", provider: "p", want: []string{"p/b", "p/a"}},
		{name: "a limit", limit: 2, want: []string{"p/b", "p/a"}},
		{name: "a provider without gaps", provider: "r", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gaps, err := status.FindGaps(ctx, pool, tc.provider, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range gaps {
				got = append(got, g.Provider+"/"+g.ExternalID)
				if g.ExternalID == "a" && g.StatusURL != "https://api.example/jobs/a" {
					t.Errorf("gap a has status URL %q", g.StatusURL)
				}
				if g.ExternalID == "b" && g.StatusURL != "" {
					t.Errorf("gap b, expected without a status URL, has %q", g.StatusURL)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("gaps %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("gaps %v, want %v", got, tc.want)
				}
			}
		})
	}
}
