package metrics_test

import (
	"testing"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestServeProvidersFromZero: on a database where nothing is ordered and no
// check ran, every configured provider's alert series are served as 0
// (ingest's 503s, backfill's refusals and event-log passes, ordering), a
// provider ordered in the database but not configured here is served too,
// and every enabled check is served as ok (1) before its first run.
func TestServeProvidersFromZero(t *testing.T) {
	t.Parallel()
	pool := pgtest.PoolFor(t, pgtest.NewConfig(t).URL(), 2)
	set := metrics.New(pool)
	set.ServeProviders([]string{"sume", "stripe"})
	pgtest.Exec(t, pool, `SELECT webhooks.set_ordering('elsewhere', '$.k')`)
	for _, tc := range []struct{ name, provider string }{
		{"pginbox_rejections_total", "sume"},
		{"pginbox_backfill_refused_total", "stripe"},
		{"pginbox_backfill_log_passes_total", "sume"},
		{"pginbox_backfill_log_passes_total", "stripe"},
		{"pginbox_out_of_order_total", "sume"},
		{"pginbox_out_of_order_total", "stripe"},
		{"pginbox_out_of_order_total", "elsewhere"},
		{"pginbox_blocked_sequences", "sume"},
		{"pginbox_blocked_sequences", "elsewhere"},
	} {
		if v, ok := served(t, set, tc.name, tc.provider); !ok || v != 0 {
			t.Errorf("%s{provider=%q} = %v (served: %t), want 0 from the start", tc.name, tc.provider, v, ok)
		}
	}

	mfs, err := set.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var checks, backfill int
	for _, mf := range mfs {
		switch mf.GetName() {
		case "pginbox_check_ok":
			for _, m := range mf.GetMetric() {
				checks++
				if v := m.GetGauge().GetValue(); v != 1 {
					t.Errorf("pginbox_check_ok%v = %v before any run, want 1", m.GetLabel(), v)
				}
			}
		case "pginbox_check_value":
			t.Errorf("pginbox_check_value is served before any check ran (%d series)", len(mf.GetMetric()))
		case "pginbox_backfill_total":
			backfill = len(mf.GetMetric())
		}
	}
	if checks < 10 {
		t.Errorf("%d pginbox_check_ok series before any run, want every enabled check", checks)
	}
	if backfill != len(metrics.BackfillOutcomes) {
		t.Errorf("%d pginbox_backfill_total series, want one per outcome %v", backfill, metrics.BackfillOutcomes)
	}
}
