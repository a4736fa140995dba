package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/runner"
)

// sqlConn is a pool or a transaction.
type sqlConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func execOn(t testing.TB, db sqlConn, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// frozen begins a transaction on pool (rolled back when t ends unless
// committed): now(), which every seed and every check reads, is one instant
// in it, so the one-hour windows the learned check counts hold exactly what
// was seeded into them, however slow the machine.
func frozen(t testing.TB, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// seedEvenly inserts n processed events of provider acme, received evenly
// between from and to ago (e.g. "29 days", "0 seconds"), each processed 1 s
// after its receipt. Straight INSERTs: thousands of back-dated events in one
// statement.
func seedEvenly(t testing.TB, db sqlConn, prefix string, n int, from, to string) {
	t.Helper()
	execOn(t, db, `
		INSERT INTO webhooks.events (provider, external_id, event_type, status, payload, received_at,
		                             updated_at, claimed_at, processed_at, attempts, run_after)
		SELECT 'acme', $1 || g, 'thing.happened', 'processed', '{}', x.at,
		       x.at + interval '1 second', x.at + interval '1 second', x.at + interval '1 second', 1, x.at
		FROM generate_series(1, $2::int) AS g
		CROSS JOIN LATERAL (
			SELECT now() - $3::interval + ($3::interval - $4::interval) * ((g - 0.5) / $2::int) AS at
		) AS x`, prefix, n, from, to)
}

// weeklyPeaks seeds weeks of history with a weekly shape: 10 events an hour
// all the time, and in the hour that ended exactly 1, 2, 3 and 4 weeks ago
// (this hour of the week, "Monday morning") a peak of about 300 more.
// Evaluated at the same now(), the learned band of traffic_last_hour is
// median 307.5, MAD 5: 307.5 +- greatest(3*5, 10, 307.5/2) = [153.75, 461.25].
func weeklyPeaks(t testing.TB, db sqlConn, weeks int) {
	t.Helper()
	days := weeks*7 + 1
	seedEvenly(t, db, "quiet_", days*24*10, fmt.Sprintf("%d days", days), "0 seconds") // one every 6 minutes
	for w, n := range []int{290, 300, 310, 295}[:weeks] {
		end := fmt.Sprintf("%d days", 7*(w+1))
		seedEvenly(t, db, fmt.Sprintf("peak_w%d_", w+1), n, end+" 1 hour", end)
	}
}

// learnedResult is the traffic_last_hour row of run_checks() and what
// check_results recorded about its range.
type learnedResult struct {
	checkResult
	Source string
	Weeks  *int
}

// runLearned refreshes the views, records a healthy reconciliation pass and
// runs the checks on db.
func runLearned(t testing.TB, db sqlConn) (learnedResult, []checkResult) {
	t.Helper()
	execOn(t, db, `INSERT INTO webhooks.reconcile_runs (finished_at, trigger) VALUES (now(), 'test')`)
	execOn(t, db, `SELECT webhooks.refresh_views()`)
	rows, err := db.Query(context.Background(), `
		SELECT name, family, value::float8, min_ok::float8, max_ok::float8, ok FROM webhooks.run_checks()`)
	if err != nil {
		t.Fatalf("run_checks: %v", err)
	}
	res, err := pgx.CollectRows(rows, pgx.RowToStructByPos[checkResult])
	if err != nil {
		t.Fatal(err)
	}
	r, ok := resultOf(res, "traffic_last_hour")
	if !ok {
		t.Fatalf("run_checks returned no traffic_last_hour: %v", res)
	}
	out := learnedResult{checkResult: r}
	if err := db.QueryRow(context.Background(), `
		SELECT range_source, history_weeks FROM webhooks.check_results
		WHERE name = 'traffic_last_hour' ORDER BY run_at DESC LIMIT 1`).Scan(&out.Source, &out.Weeks); err != nil {
		t.Fatal(err)
	}
	return out, res
}

func okOf(t testing.TB, res []checkResult, name string) bool {
	t.Helper()
	r, found := resultOf(res, name)
	if !found {
		t.Fatalf("no result for %s", name)
	}
	return r.OK
}

// TestLearnedThresholds: traffic_last_hour judges the last hour against the
// same hour of the week over the last four weeks. A normal weekly peak
// passes where the fixed provider_spike_ratio fires; a drop to a third of
// the usual volume fires where no fixed check does; with under three weeks
// of history it falls back to the fixed range; an operator can pin it.
func TestLearnedThresholds(t *testing.T) {
	t.Parallel()

	t.Run("normal weekly peak", func(t *testing.T) {
		t.Parallel()
		tx := frozen(t, NewPool(t, 4))
		weeklyPeaks(t, tx, 4)
		seedEvenly(t, tx, "now_", 300, "1 hour", "0 seconds") // the usual Monday morning
		r, res := runLearned(t, tx)
		if !r.OK || r.Source != "learned" || r.Weeks == nil || *r.Weeks != 4 {
			t.Fatalf("traffic_last_hour %v (%s, weeks %v), want ok against a band learned from 4 weeks", r, r.Source, r.Weeks)
		}
		// acme's 310 against its band 307.5 +- 153.75: 2.5/153.75 of a
		// half-width above the median, judged against [-1, 1].
		if r.Value == nil || r.MinOK == nil || r.MaxOK == nil || math.Abs(*r.Value-2.5/153.75) > 1e-12 || *r.MinOK != -1 || *r.MaxOK != 1 {
			t.Fatalf("traffic_last_hour %v, want 0.01626 against [-1, 1]", r.checkResult)
		}
		if d := queryString(t, tx, `SELECT detail FROM webhooks.check_results WHERE name = 'traffic_last_hour'`); d != "worst acme: 310, band [153.75, 461.25] around the median 307.5 of 4 weeks" {
			t.Fatalf("detail %q, want acme's band [153.75, 461.25] (median 307.5 +- half of it)", d)
		}
		// Today's fixed range sees the same hour as a flood.
		if okOf(t, res, "provider_spike_ratio") {
			t.Fatalf("provider_spike_ratio ok on the weekly peak: the fixed range was expected to fire (%v)", res)
		}
		t.Logf("%v; %s", r.checkResult, func() string { _, d := breaches(res); return d }())
	})

	t.Run("drop to a third", func(t *testing.T) {
		t.Parallel()
		tx := frozen(t, NewPool(t, 4))
		weeklyPeaks(t, tx, 4)
		seedEvenly(t, tx, "now_", 92, "1 hour", "0 seconds") // 102 with the quiet ones: a third of 307.5
		r, res := runLearned(t, tx)
		// (102 - 307.5) / 153.75: 1.34 half-widths below the median.
		if r.OK || r.Source != "learned" || r.Value == nil || *r.Value > -1.3 {
			t.Fatalf("traffic_last_hour %v (%s), want a breach of the learned band", r, r.Source)
		}
		// No fixed volume check sees it: the provider is not silent and
		// sends less than its 24-hour baseline, not more.
		for _, name := range []string{"providers_silent", "provider_spike_ratio"} {
			if !okOf(t, res, name) {
				t.Errorf("%s breached on a drop: only the learned check was expected to fire", name)
			}
		}
		if got, _ := breaches(res); len(got) != 1 || got[0] != "traffic_last_hour" {
			t.Errorf("breached %v, want only traffic_last_hour", got)
		}
	})

	t.Run("short history falls back to the fixed range", func(t *testing.T) {
		t.Parallel()
		tx := frozen(t, NewPool(t, 4))
		weeklyPeaks(t, tx, 2)
		seedEvenly(t, tx, "now_", 92, "1 hour", "0 seconds")
		r, _ := runLearned(t, tx)
		if !r.OK || r.Source != "fallback" || r.Weeks == nil || *r.Weeks != 2 || r.MinOK != nil || r.MaxOK != nil {
			t.Fatalf("traffic_last_hour %v (%s, weeks %v), want ok on the default fixed range (any) after 2 weeks", r, r.Source, r.Weeks)
		}
		// The fallback is the fixed range, whatever it is.
		execOn(t, tx, `UPDATE webhooks.checks SET min_ok = 200 WHERE name = 'traffic_last_hour'`)
		r, _ = runLearned(t, tx)
		if r.OK || r.Source != "fallback" || r.MinOK == nil || *r.MinOK != 200 {
			t.Fatalf("traffic_last_hour %v (%s), want a breach of the fixed min_ok 200", r, r.Source)
		}
	})

	t.Run("pin and unpin", func(t *testing.T) {
		t.Parallel()
		tx := frozen(t, NewPool(t, 4))
		weeklyPeaks(t, tx, 4)
		seedEvenly(t, tx, "now_", 300, "1 hour", "0 seconds")

		execOn(t, tx, `SELECT webhooks.set_check_range('traffic_last_hour', 0, 200)`)
		if mode := queryString(t, tx, `SELECT range_mode FROM webhooks.checks WHERE name = 'traffic_last_hour'`); mode != "fixed" {
			t.Fatalf("range_mode %q after set_check_range, want fixed", mode)
		}
		r, _ := runLearned(t, tx)
		if r.OK || r.Source != "fixed" || r.MaxOK == nil || *r.MaxOK != 200 || r.Weeks != nil {
			t.Fatalf("pinned: traffic_last_hour %v (%s, weeks %v), want a breach of the pinned [0, 200]", r, r.Source, r.Weeks)
		}

		execOn(t, tx, `SELECT webhooks.set_check_mode('traffic_last_hour', 'learned')`)
		if r, _ = runLearned(t, tx); !r.OK || r.Source != "learned" {
			t.Fatalf("learned again: traffic_last_hour %v (%s), want ok", r, r.Source)
		}
		// Tuning: k = 1 and no floors leave median +- MAD: 310 is half a
		// half-width above 307.5 in [302.5, 312.5].
		execOn(t, tx, `SELECT webhooks.set_check_mode('traffic_last_hour', 'learned', k => 1, floor_abs => 0, floor_ratio => 0)`)
		if r, _ = runLearned(t, tx); r.Value == nil || *r.Value != 0.5 {
			t.Fatalf("tuned band: traffic_last_hour %v, want 0.5", r)
		}
		if d := queryString(t, tx, `SELECT detail FROM webhooks.check_results WHERE name = 'traffic_last_hour' ORDER BY run_at DESC LIMIT 1`); !strings.Contains(d, "band [302.5, 312.5]") {
			t.Fatalf("tuned band: detail %q, want [302.5, 312.5]", d)
		}
		// The fixed range survived the round trip as the fallback.
		if got := queryString(t, tx, `SELECT concat_ws(' ', min_ok, max_ok) FROM webhooks.checks WHERE name = 'traffic_last_hour'`); got != "0 200" {
			t.Fatal("set_check_mode lost the pinned range")
		}
	})

	t.Run("refusals", func(t *testing.T) {
		t.Parallel()
		pool := NewPool(t, 2)
		for _, c := range []struct {
			sql, code string
		}{
			{`SELECT webhooks.set_check_range('no_such_check', 0, 1)`, "42704"},
			{`SELECT webhooks.set_check_range('queue_depth', 2, 1)`, "22023"},
			{`SELECT webhooks.set_check_mode('no_such_check', 'fixed')`, "42704"},
			{`SELECT webhooks.set_check_mode('traffic_last_hour', 'sometimes')`, "22023"},
			{`SELECT webhooks.set_check_mode('traffic_last_hour', NULL)`, "22023"},
			{`SELECT webhooks.set_check_mode('traffic_last_hour', 'learned', k => 0)`, "22023"},
			{`SELECT webhooks.set_check_mode('traffic_last_hour', 'learned', min_weeks => 5)`, "22023"},
			// A query without $1 cannot be evaluated in the past.
			{`SELECT webhooks.set_check_mode('queue_depth', 'learned')`, "22023"},
			{`UPDATE webhooks.checks SET range_mode = 'learned' WHERE name = 'queue_depth'`, "23514"},
		} {
			_, err := pool.Exec(context.Background(), c.sql)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != c.code {
				t.Errorf("%s: %v, want SQLSTATE %s", c.sql, err, c.code)
			}
		}
		// The median behind the band: the middle value, the mean of the
		// middle two, NULLs ignored, NULL for none.
		for in, want := range map[string]string{`{3,1,2}`: "2", `{4,1,3,2}`: "2.5", `{5,NULL,1}`: "3", `{}`: "none", `{NULL}`: "none"} {
			if got := queryString(t, pool, `SELECT coalesce(webhooks._median($1::numeric[])::text, 'none')`, in); got != want {
				t.Errorf("_median(%s) = %s, want %s", in, got, want)
			}
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.checks WHERE range_mode = 'learned'`); n != 1 {
			t.Fatalf("%d learned checks after refusals, want 1 (traffic_last_hour)", n)
		}
	})

	t.Run("a broken learned query is a failed check", func(t *testing.T) {
		t.Parallel()
		pool := NewPool(t, 2)
		execSQL(t, pool, `UPDATE webhooks.checks SET query = 'SELECT 1 / (604800 - extract(epoch FROM now() - $1))::int'
			WHERE name = 'traffic_last_hour'`) // divides by zero exactly one week ago
		r, _ := runLearned(t, pool)
		if r.OK || r.Value != nil || r.Source != "fallback" {
			t.Fatalf("traffic_last_hour %v (%s), want not ok with no value: its history query failed", r, r.Source)
		}
	})
}

func queryString(t testing.TB, db sqlConn, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// TestStatusShowsLearnedBand: the console's overview shows a learned
// check's band next to its value (marked learned), a learned check still
// short of history as learning on its fixed range, and /api/status carries
// the band.
func TestStatusShowsLearnedBand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                 string
		weeks                int
		value, source, shown string
	}{
		// Learned per provider: acme's distance from its band, in [-1, 1].
		{"four weeks", 4, "0.01626", "learned", `<span data-range="learned" title="learned from 4 weeks of this hour; fixed range any">-1 – 1 <span class="chip">learned</span></span>`},
		// Too short a history: the total on the fixed range.
		{"two weeks", 2, "310", "fallback", `<span data-range="fallback" title="learns from the same hour of the last 4 weeks (2 with data so far); judged on the fixed range until enough">any <span class="chip">learning</span></span>`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			conf := NewConfig(t)
			tx := frozen(t, PoolFor(t, conf.URL(), 4))
			weeklyPeaks(t, tx, c.weeks)
			seedEvenly(t, tx, "now_", 300, "1 hour", "0 seconds")
			runLearned(t, tx)
			if err := tx.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			// No scheduled run: the page shows the result recorded above.
			srv := startServer(t, conf.URL(), runner.Config{ChecksEvery: -1}, sumeOnly)

			page := httpGet(t, srv.Admin+"/")
			row := page[strings.Index(page, `data-check="traffic_last_hour"`):]
			row = row[:strings.Index(row, "</tr>")]
			if !strings.Contains(row, `<td class="num">`+c.value+`</td>`) || !strings.Contains(row, c.shown) {
				t.Fatalf("overview row of traffic_last_hour:\n%s\nwant the value %s and %s", row, c.value, c.shown)
			}

			var st struct {
				Checks []struct {
					Name         string   `json:"name"`
					RangeMode    string   `json:"range_mode"`
					RangeSource  *string  `json:"range_source"`
					LearnedMinOK *float64 `json:"learned_min_ok"`
					LearnedMaxOK *float64 `json:"learned_max_ok"`
					HistoryWeeks *int     `json:"history_weeks"`
				} `json:"checks"`
			}
			if err := json.Unmarshal([]byte(httpGet(t, srv.Admin+"/api/status")), &st); err != nil {
				t.Fatal(err)
			}
			for _, ch := range st.Checks {
				if ch.Name != "traffic_last_hour" {
					continue
				}
				learned := c.source == "learned"
				if ch.RangeMode != "learned" || ch.RangeSource == nil || *ch.RangeSource != c.source ||
					ch.HistoryWeeks == nil || *ch.HistoryWeeks != c.weeks ||
					(ch.LearnedMinOK != nil) != learned || (learned && (*ch.LearnedMinOK != -1 || *ch.LearnedMaxOK != 1)) {
					t.Fatalf("/api/status traffic_last_hour: %+v, want %s from %d weeks", ch, c.source, c.weeks)
				}
				return
			}
			t.Fatal("/api/status has no traffic_last_hour")
		})
	}
}
