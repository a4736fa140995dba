package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// seedProviderEvenly inserts n processed events of provider, received
// evenly between from and to ago (see seedEvenly).
func seedProviderEvenly(t testing.TB, db sqlConn, provider, prefix string, n int, from, to string) {
	t.Helper()
	execOn(t, db, `
		INSERT INTO webhooks.events (provider, external_id, event_type, status, payload, received_at,
		                             updated_at, claimed_at, processed_at, attempts, run_after)
		SELECT $5, $1 || g, 'thing.happened', 'processed', '{}', x.at,
		       x.at + interval '1 second', x.at + interval '1 second', x.at + interval '1 second', 1, x.at
		FROM generate_series(1, $2::int) AS g
		CROSS JOIN LATERAL (
			SELECT now() - $3::interval + ($3::interval - $4::interval) * ((g - 0.5) / $2::int) AS at
		) AS x`, prefix, n, from, to, provider)
}

// providerHistory seeds provider's events in the hour that ended exactly
// 1, 2, 3 and 4 weeks ago (weeks[0] is a week ago), one event 35 days ago
// so the provider exists before all of them, and now events in the last
// hour. Only these windows matter to traffic_last_hour.
func providerHistory(t testing.TB, db sqlConn, provider string, weeks [4]int, now int) {
	t.Helper()
	seedProviderEvenly(t, db, provider, provider+"_birth_", 1, "35 days", "35 days")
	for w, n := range weeks {
		if n == 0 {
			continue
		}
		end := fmt.Sprintf("%d days", 7*(w+1))
		seedProviderEvenly(t, db, provider, fmt.Sprintf("%s_w%d_", provider, w+1), n, end+" 1 hour", end)
	}
	if now > 0 {
		seedProviderEvenly(t, db, provider, provider+"_now_", now, "1 hour", "0 seconds")
	}
}

// providerResult is traffic_last_hour's row of run_checks() with what
// check_results recorded about it.
type providerResult struct {
	learnedResult
	Detail string
}

// runProviders runs the checks and reads traffic_last_hour's result. The
// verdict is checked by the caller before the detail is read, so on a
// schema without check_results.detail the test fails on the verdict.
func runProviders(t testing.TB, db sqlConn) (providerResult, []checkResult) {
	t.Helper()
	r, res := runLearned(t, db)
	return providerResult{learnedResult: r}, res
}

func (r *providerResult) readDetail(t testing.TB, db sqlConn) {
	t.Helper()
	r.Detail = queryString(t, db, `
		SELECT coalesce(detail, '') FROM webhooks.check_results
		WHERE name = 'traffic_last_hour' ORDER BY run_at DESC LIMIT 1`)
}

// TestLearnedPerProvider: traffic_last_hour learns per provider. Its value
// is the worst provider's distance from its own band in half-widths
// ([-1, 1] is inside), so one provider's outage no longer hides in the
// total, weeks of an odd pattern never make zero normal for a provider that
// usually sends 50 or more an hour, and a provider without history is not
// judged.
func TestLearnedPerProvider(t *testing.T) {
	t.Parallel()

	// big ~300/h and small ~60/h in this hour of each of the last four
	// weeks: their total ~360 has the band 360 +- 180, so the total of big
	// alone (300) lies inside it. small's own band is 60 +- 30.
	big := [4]int{290, 300, 310, 295}
	small := [4]int{58, 60, 62, 61}

	t.Run("one provider silent, total normal", func(t *testing.T) {
		t.Parallel()
		tx := frozen(t, NewPool(t, 4))
		providerHistory(t, tx, "big", big, 300)
		providerHistory(t, tx, "small", small, 0)
		r, _ := runProviders(t, tx)
		if r.OK || r.Source != "learned" || r.Value == nil || *r.Value >= -1 {
			t.Fatalf("traffic_last_hour %v (%s), want a breach below the band of small (a distance under -1)", r.checkResult, r.Source)
		}
		// small: median 60.5, band 60.5 +- 30.25: 0 lies 2 half-widths below.
		if *r.Value != -2 || *r.MinOK != -1 || *r.MaxOK != 1 || r.Weeks == nil || *r.Weeks != 4 {
			t.Fatalf("traffic_last_hour %v from %v weeks, want -2 against [-1, 1] from 4", r.checkResult, r.Weeks)
		}
		r.readDetail(t, tx)
		if want := "worst small: 0, band [30.25, 90.75] around the median 60.5 of 4 weeks"; r.Detail != want {
			t.Fatalf("detail %q, want %q", r.Detail, want)
		}
		// The alert names the provider.
		desc := queryString(t, tx, `SELECT description FROM webhooks.alerts WHERE name = 'traffic_last_hour' AND status = 'firing'`)
		if !strings.HasSuffix(desc, "("+r.Detail+")") {
			t.Fatalf("alert description %q does not end with the detail", desc)
		}
	})

	t.Run("odd weeks never make zero normal", func(t *testing.T) {
		t.Parallel()
		tx := frozen(t, NewPool(t, 4))
		// Nothing in this hour of the last two weeks (an outage, a paused
		// integration), 110 and 120 before: median 55, MAD 55, so 3 MAD
		// would reach down to -110. The lower edge stays at 5.5.
		providerHistory(t, tx, "odd", [4]int{0, 0, 110, 120}, 0)
		r, _ := runProviders(t, tx)
		if r.OK || r.Source != "learned" || r.Value == nil || *r.Value >= -1 {
			t.Fatalf("traffic_last_hour %v (%s), want a breach: zero from a provider whose median is 55", r.checkResult, r.Source)
		}
		r.readDetail(t, tx)
		if want := "worst odd: 0, band [5.5, 220] around the median 55 of 4 weeks"; r.Detail != want {
			t.Fatalf("detail %q, want %q", r.Detail, want)
		}
		// One event is inside: the floor is a tenth of the median, not more.
		seedProviderEvenly(t, tx, "odd", "odd_now_", 6, "1 hour", "0 seconds")
		if r, _ = runProviders(t, tx); !r.OK {
			t.Fatalf("traffic_last_hour %v with 6 events, want ok (the floor is 5.5)", r.checkResult)
		}
		// Switched off (zero_floor => 0), the odd weeks make zero normal again.
		execOn(t, tx, `DELETE FROM webhooks.events WHERE external_id LIKE 'odd_now_%'`)
		execOn(t, tx, `SELECT webhooks.set_check_mode('traffic_last_hour', 'learned', zero_floor => 0)`)
		if r, _ = runProviders(t, tx); !r.OK {
			t.Fatalf("traffic_last_hour %v without the zero floor, want ok", r.checkResult)
		}
	})

	t.Run("normal traffic on every provider", func(t *testing.T) {
		t.Parallel()
		tx := frozen(t, NewPool(t, 4))
		providerHistory(t, tx, "big", big, 305)
		providerHistory(t, tx, "small", small, 55)
		r, res := runProviders(t, tx)
		if !r.OK || r.Source != "learned" || r.Value == nil || *r.Value < -1 || *r.Value > 1 {
			t.Fatalf("traffic_last_hour %v (%s), want ok inside [-1, 1]", r.checkResult, r.Source)
		}
		if got, detail := breaches(res); len(got) != 0 {
			t.Fatalf("breached %v on normal traffic: %s", got, detail)
		}
		r.readDetail(t, tx)
		// small (55 against 60.5 +- 30.25, -0.18) is further from its
		// median than big (305 against 297.5 +- 148.75, +0.05).
		if !strings.HasPrefix(r.Detail, "worst small: 55, band [30.25, 90.75]") {
			t.Fatalf("detail %q, want small named as the worst", r.Detail)
		}
	})

	t.Run("a provider without history is not judged", func(t *testing.T) {
		t.Parallel()
		tx := frozen(t, NewPool(t, 4))
		providerHistory(t, tx, "big", big, 300)
		// new since two days: 500 in the last hour, nothing to compare with.
		seedProviderEvenly(t, tx, "new", "new_first_", 1, "2 days", "2 days")
		seedProviderEvenly(t, tx, "new", "new_now_", 500, "1 hour", "0 seconds")
		// quiet: new since a day, and silent this hour.
		seedProviderEvenly(t, tx, "quiet", "quiet_first_", 100, "1 day", "23 hours")
		r, _ := runProviders(t, tx)
		if !r.OK || r.Source != "learned" || r.Weeks == nil || *r.Weeks != 4 {
			t.Fatalf("traffic_last_hour %v (%s, weeks %v), want ok: only big has history", r.checkResult, r.Source, r.Weeks)
		}
		r.readDetail(t, tx)
		if !strings.HasPrefix(r.Detail, "worst big: 300,") {
			t.Fatalf("detail %q, want big, the only provider judged", r.Detail)
		}
	})

	t.Run("no provider with history falls back to the total", func(t *testing.T) {
		t.Parallel()
		tx := frozen(t, NewPool(t, 4))
		// young since 20 days: 100 in this hour one and two weeks ago.
		seedProviderEvenly(t, tx, "young", "young_first_", 1, "20 days", "20 days")
		seedProviderEvenly(t, tx, "young", "young_w1_", 100, "7 days 1 hour", "7 days")
		seedProviderEvenly(t, tx, "young", "young_w2_", 100, "14 days 1 hour", "14 days")
		seedProviderEvenly(t, tx, "young", "young_now_", 40, "1 hour", "0 seconds")
		r, _ := runProviders(t, tx)
		// Two weeks of history, short of three: the total against the fixed range.
		if !r.OK || r.Source != "fallback" || r.Value == nil || *r.Value != 40 || r.Weeks == nil || *r.Weeks != 2 {
			t.Fatalf("traffic_last_hour %v (%s, weeks %v), want the total 40 judged on the fixed range (any) after 2 weeks", r.checkResult, r.Source, r.Weeks)
		}
		execOn(t, tx, `UPDATE webhooks.checks SET min_ok = 50 WHERE name = 'traffic_last_hour'`)
		if r, _ = runProviders(t, tx); r.OK || r.Source != "fallback" || *r.Value != 40 {
			t.Fatalf("traffic_last_hour %v (%s), want the total 40 to breach the fixed min_ok 50", r.checkResult, r.Source)
		}
	})

	t.Run("a broken keyed query fails the check", func(t *testing.T) {
		t.Parallel()
		pool := NewPool(t, 2)
		for _, c := range []struct{ query, err string }{
			{`SELECT 'a', 1 WHERE $1 IS NOT NULL UNION ALL SELECT 'a', 2`, "gave the key 'a' more than once"},
			{`SELECT count(*) FROM webhooks.events WHERE received_at < $1`, "has 1 columns available but 2 columns specified"},
		} {
			execSQL(t, pool, `UPDATE webhooks.checks SET query = $1 WHERE name = 'traffic_last_hour'`, c.query)
			r, _ := runLearned(t, pool)
			msg := queryString(t, pool, `SELECT coalesce(error, '') FROM webhooks.check_results
				WHERE name = 'traffic_last_hour' ORDER BY run_at DESC LIMIT 1`)
			if r.OK || r.Value != nil || !strings.Contains(msg, c.err) {
				t.Fatalf("%s: traffic_last_hour %v (error %q), want not ok with no value and an error saying %q", c.query, r.checkResult, msg, c.err)
			}
		}
	})

	t.Run("band", func(t *testing.T) {
		t.Parallel()
		pool := NewPool(t, 2)
		for _, c := range []struct{ vals, zeroFloor, want string }{
			{`{0,0,110,120}`, "50", "55 5.5 220"},       // floored: 55 - 165 would be below zero
			{`{0,0,110,120}`, "0", "55 -110 220"},       // no floor
			{`{0,0,80,90}`, "50", "40 -80 160"},         // median under 50: zero stays inside
			{`{58,60,62,61}`, "50", "60.5 30.25 90.75"}, // the floor is below the band anyway
			{`{}`, "50", "none"},
		} {
			got := queryString(t, pool, `
				SELECT coalesce((SELECT concat_ws(' ', trim_scale(b.median), trim_scale(b.min_ok), trim_scale(b.max_ok))
				                 FROM webhooks._learned_band($1::numeric[], 3, 10, 0.5, $2::numeric) AS b
				                 WHERE b.median IS NOT NULL), 'none')`, c.vals, c.zeroFloor)
			if got != c.want {
				t.Errorf("_learned_band(%s, zero_floor %s) = %s, want %s", c.vals, c.zeroFloor, got, c.want)
			}
		}
		_, err := pool.Exec(context.Background(), `SELECT webhooks.set_check_mode('traffic_last_hour', 'learned', zero_floor => -1)`)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "22023" {
			t.Fatalf("set_check_mode with zero_floor -1: %v, want SQLSTATE 22023", err)
		}
	})
}
