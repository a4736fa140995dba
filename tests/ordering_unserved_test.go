package tests

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestServeWarnsOrderingUnservedProvider: pginbox serve started with
// PGINBOX_PROVIDERS=payments=stripe logs one warning, naming the provider and
// the served one of that kind, for set_ordering('stripe', …) (the kind in
// the name's place, which orders nothing); ordering on 'payments' itself
// draws none.
func TestServeWarnsOrderingUnservedProvider(t *testing.T) {
	t.Parallel()
	const warning = "set_ordering ordered a provider this runner does not serve"
	cases := []struct {
		name    string
		ordered []string
		warned  []string
	}{
		{"the kind in the name's place", []string{"stripe"}, []string{"stripe"}},
		{"the served name", []string{"payments"}, nil},
		{"both, and one nobody serves", []string{"payments", "stripe", "zeta"}, []string{"stripe", "zeta"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conf := NewConfig(t)
			pool := PoolFor(t, conf.URL(), 2)
			for _, p := range tc.ordered {
				execSQL(t, pool, `SELECT webhooks.set_ordering($1, '$.data.object.customer', '$.created')`, p)
			}
			p := startRunner(t, map[string]string{
				"DATABASE_URL":            conf.URL(),
				"PGINBOX_PROVIDERS":       "payments=stripe",
				"PGINBOX_SECRET_PAYMENTS": kitOf("stripe").Secrets[0],
			})
			waitFor(t, 10*time.Second, "the serving line", func() bool { return strings.Contains(p.Logs(), `"msg":"pginbox serving"`) })
			var warned []string
			for _, line := range strings.Split(p.Logs(), "\n") {
				if !strings.Contains(line, warning) {
					continue
				}
				var rec struct {
					Level    string   `json:"level"`
					Provider string   `json:"provider"`
					Served   []string `json:"served"`
					OfKind   []string `json:"served_of_that_kind"`
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("warning is not a JSON line: %v: %s", err, line)
				}
				if rec.Level != "WARN" || !slices.Equal(rec.Served, []string{"payments"}) {
					t.Errorf("warning line: %s", line)
				}
				wantOfKind := []string{}
				if rec.Provider == "stripe" {
					wantOfKind = []string{"payments"}
				}
				if !slices.Equal(rec.OfKind, wantOfKind) {
					t.Errorf("served_of_that_kind %q, want %q: %s", rec.OfKind, wantOfKind, line)
				}
				warned = append(warned, rec.Provider)
			}
			if !slices.Equal(warned, tc.warned) {
				t.Fatalf("warned about %q, want %q; log:\n%s", warned, tc.warned, p.Logs())
			}
		})
	}
}
