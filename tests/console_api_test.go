package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/runner"
)

// apiEvents is the JSON of GET /api/events as a client reads it.
type apiEvents struct {
	Events []struct {
		ID          int64      `json:"id"`
		Provider    string     `json:"provider"`
		ExternalID  string     `json:"external_id"`
		EventType   string     `json:"event_type"`
		Status      string     `json:"status"`
		Source      string     `json:"source"`
		ReceivedAt  time.Time  `json:"received_at"`
		ProcessedAt *time.Time `json:"processed_at"`
		Attempts    int        `json:"attempts"`
		MaxAttempts int        `json:"max_attempts"`
		LastError   *string    `json:"last_error"`
	} `json:"events"`
	NextCursor *string          `json:"next_cursor"`
	Counts     map[string]int64 `json:"counts"`
}

func getEvents(t *testing.T, admin, token string, q url.Values) (int, apiEvents, string) {
	t.Helper()
	code, _, body := adminDo(t, nil, "GET", admin+"/api/events?"+q.Encode(), token, "", nil)
	var out apiEvents
	if code == 200 {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
	}
	return code, out, body
}

// seedConsole stores a mix of events: two providers, types, sources,
// payloads, statuses, received over the last hours.
func seedConsole(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	execSQL(t, pool, `
		INSERT INTO webhooks.events (provider, external_id, event_type, payload, source, received_at)
		SELECT CASE WHEN g % 3 = 0 THEN 'stripe' ELSE 'sume' END, 'ev_' || g,
		       CASE WHEN g % 4 = 0 THEN 'invoice.paid' ELSE 'job.completed' END,
		       jsonb_build_object('customer', 'cus_' || (g % 7), 'n', g),
		       CASE WHEN g % 10 = 0 THEN 'backfill' ELSE 'webhook' END,
		       now() - (200 - g) * interval '1 minute'
		FROM generate_series(1, 200) AS g`)
	execSQL(t, pool, `UPDATE webhooks.events SET status = 'processed', processed_at = now(), attempts = 1, claimed_at = now() WHERE id % 5 = 1`)
	execSQL(t, pool, `UPDATE webhooks.events SET status = 'dead', attempts = max_attempts, last_error = 'boom ' || id WHERE id % 5 = 2`)
}

// TestConsoleAPIFiltersMatchSQL: each filter of GET /api/events, walked to
// its end, returns exactly the rows the same condition selects in SQL,
// newest first, with the counts per status.
func TestConsoleAPIFiltersMatchSQL(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	seedConsole(t, pool)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	var mid time.Time
	if err := pool.QueryRow(context.Background(), `SELECT received_at FROM webhooks.events WHERE external_id = 'ev_100'`).Scan(&mid); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		q     url.Values
		where string
		args  []any
	}{
		{"none", url.Values{}, "true", nil},
		{"provider", url.Values{"provider": {"stripe"}}, "provider = 'stripe'", nil},
		{"status", url.Values{"status": {"dead"}}, "status = 'dead'", nil},
		{"provider+status", url.Values{"provider": {"sume"}, "status": {"processed"}}, "provider = 'sume' AND status = 'processed'", nil},
		{"event_type", url.Values{"event_type": {"invoice.paid"}}, "event_type = 'invoice.paid'", nil},
		{"source", url.Values{"source": {"backfill"}}, "source = 'backfill'", nil},
		{"external_id", url.Values{"external_id": {"ev_42"}}, "external_id = 'ev_42'", nil},
		{"external_id+provider", url.Values{"external_id": {"ev_42"}, "provider": {"stripe"}}, "external_id = 'ev_42' AND provider = 'stripe'", nil},
		{"since", url.Values{"since": {mid.Format(time.RFC3339Nano)}}, "received_at >= $1", []any{mid}},
		{"until", url.Values{"until": {mid.Format(time.RFC3339Nano)}}, "received_at < $1", []any{mid}},
		{"payload", url.Values{"payload": {`{"customer": "cus_3"}`}}, `payload @> '{"customer": "cus_3"}'`, nil},
		{"all", url.Values{"provider": {"sume"}, "status": {"pending"}, "event_type": {"job.completed"}, "payload": {`{"customer": "cus_1"}`},
			"since": {mid.Add(-time.Hour).Format(time.RFC3339)}}, `provider = 'sume' AND status = 'pending' AND event_type = 'job.completed'
			AND payload @> '{"customer": "cus_1"}' AND received_at >= $1`, []any{mid.Add(-time.Hour).Truncate(time.Second)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := pool.Query(context.Background(), `SELECT id FROM webhooks.events WHERE `+tc.where+` ORDER BY received_at DESC, id DESC`, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Fatalf("the seed has no row for %s: the test would prove nothing", tc.where)
			}
			var got []int64
			q := url.Values{}
			for k, v := range tc.q {
				q[k] = v
			}
			q.Set("limit", "7")
			var counts map[string]int64
			for pages := 0; ; pages++ {
				code, page, body := getEvents(t, srv.Admin, "", q)
				if code != 200 {
					t.Fatalf("%d %s", code, body)
				}
				if counts == nil {
					counts = page.Counts
				}
				for _, e := range page.Events {
					got = append(got, e.ID)
				}
				if page.NextCursor == nil {
					break
				}
				q.Set("cursor", *page.NextCursor)
				if pages > 100 {
					t.Fatal("pagination does not end")
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("API %v\nSQL %v", got, want)
			}
			var total int64
			for _, n := range counts {
				total += n
			}
			if total != int64(len(want)) {
				t.Fatalf("counts %v sum to %d, want %d", counts, total, len(want))
			}
		})
	}
}

// TestConsoleAPIPaginationUnderInserts: walking the list page by page
// while 8 goroutines keep inserting never repeats nor skips an event that
// existed when the walk began.
func TestConsoleAPIPaginationUnderInserts(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 10)
	ingestMany(t, pool, "sume", "before_", "job.completed", 600, "", "")
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	before := map[int64]bool{}
	rows, _ := pool.Query(context.Background(), `SELECT id FROM webhooks.events`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		before[id] = true
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var inserted atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := pool.Exec(ctx, `SELECT webhooks.ingest_webhook('sume', $1, 'job.completed', '{}')`, fmt.Sprintf("during_%d_%d", g, i)); err == nil {
					inserted.Add(1)
				}
			}
		}()
	}
	seen := map[int64]bool{}
	q := url.Values{"limit": {"25"}}
	for pages := 0; ; pages++ {
		code, page, body := getEvents(t, srv.Admin, "", q)
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		for _, e := range page.Events {
			if seen[e.ID] {
				t.Fatalf("event %d shown twice", e.ID)
			}
			seen[e.ID] = true
		}
		if page.NextCursor == nil {
			break
		}
		q.Set("cursor", *page.NextCursor)
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	wg.Wait()
	for id := range before {
		if !seen[id] {
			t.Fatalf("event %d existed before the walk and was skipped", id)
		}
	}
	if inserted.Load() < 50 {
		t.Fatalf("only %d inserts during the walk: no concurrency happened", inserted.Load())
	}
	t.Logf("walked %d events while %d were inserted", len(seen), inserted.Load())
}

// TestConsoleAPIBadValuesAndAuth: bad filters are 400 with a message,
// unknown events 404, the token rules hold on the event routes.
func TestConsoleAPIBadValuesAndAuth(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	dead := deadEvent(t, pool, "job_api_dead")
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	open := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	for _, tc := range []struct {
		q    string
		want string
	}{
		{"since=yesterday", "since"},
		{"until=2026-13-45T00:00:00Z", "until"},
		{"payload=" + url.QueryEscape(`{"customer":`), "payload"},
		{"payload=" + url.QueryEscape(`["a"]`), "payload"},
		{"payload=" + url.QueryEscape(`"cus_1"`), "payload"},
		{"limit=100000", "limit"},
		{"limit=0", "limit"},
		{"limit=ten", "limit"},
		{"status=lost", "status"},
		{"cursor=not-a-cursor", "cursor"},
		{"since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", "since"},
		{"payload=" + url.QueryEscape(`{"a":1}`) + "&since=2026-01-01T00:00:00Z&until=2026-03-01T00:00:00Z", "7 days"},
	} {
		code, _, body := adminDo(t, nil, "GET", srv.Admin+"/api/events?"+tc.q, testAdminToken, "", nil)
		var msg struct{ Error string }
		_ = json.Unmarshal([]byte(body), &msg)
		if code != 400 || !strings.Contains(msg.Error, tc.want) {
			t.Errorf("GET /api/events?%s: %d %s, want 400 naming %q", tc.q, code, body, tc.want)
		}
	}
	if code, _, body := adminDo(t, nil, "GET", srv.Admin+"/api/events/999999", testAdminToken, "", nil); code != 404 {
		t.Errorf("unknown event: %d %s", code, body)
	}
	if code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/events/999999", testAdminToken, "", nil); code != 404 {
		t.Errorf("unknown event page: %d", code)
	}
	for _, path := range []string{"/api/events", fmt.Sprintf("/api/events/%d", dead)} {
		if code, _, _ := adminDo(t, nil, "GET", srv.Admin+path, "", "", nil); code != 401 {
			t.Errorf("GET %s without the token: %d, want 401", path, code)
		}
		if code, _, _ := adminDo(t, nil, "GET", open.Admin+path, "", "", nil); code != 200 {
			t.Errorf("GET %s with no token configured: %d, want 200 (reads are open)", path, code)
		}
	}
	for _, path := range []string{"/api/events/replay", "/api/providers/sume/pause", "/api/providers/sume/resume"} {
		if code, _, _ := adminDo(t, nil, "POST", open.Admin+path, "", `{"ids": [1], "reason": "x"}`, nil); code != 403 {
			t.Errorf("POST %s with no token configured: %d, want 403", path, code)
		}
	}
	// Bulk by filter: bounded, with the count.
	code, _, body := adminDo(t, nil, "POST", srv.Admin+"/api/events/replay", testAdminToken,
		`{"filter": {"status": "dead", "provider": "sume"}, "reason": "handler fixed"}`, nil)
	if code != 200 || !strings.Contains(body, `"replayed":1`) {
		t.Fatalf("bulk replay by filter: %d %s", code, body)
	}
	if code, _, body := adminDo(t, nil, "POST", srv.Admin+"/api/events/replay", testAdminToken,
		`{"filter": {"payload": "nope"}, "reason": "x"}`, nil); code != 400 {
		t.Errorf("bulk replay with a bad filter: %d %s", code, body)
	}
	ingestMany(t, pool, "sume", "many_", "job.completed", 10001, "", "")
	code, _, body = adminDo(t, nil, "POST", srv.Admin+"/api/events/replay", testAdminToken,
		`{"filter": {"event_type": "job.completed"}, "reason": "all of them"}`, nil)
	if code != 400 || !strings.Contains(body, "more than 10000") {
		t.Fatalf("bulk replay over the limit: %d %s, want 400 naming the limit", code, body)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.replays`); n != 1 {
		t.Fatalf("%d replays recorded, want only the first bulk's one", n)
	}
}

// TestEventErrorsKeptAcrossReplays: every failure is a row of
// webhooks.event_errors (fail and lease rescue), oldest first in
// GET /api/events/{id}, kept when the event is replayed, gone with it.
func TestEventErrorsKeptAcrossReplays(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	id, _ := ingest(t, pool, "sume", "job_err", "job.completed", `{"customer": "cus_9"}`)
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 2 WHERE id = $1`, id)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.fail($1, 'w', 1, 'first failure')`, id)
	execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() WHERE id = $1`, id)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `UPDATE webhooks.events SET locked_until = now() - interval '1 second' WHERE id = $1`, id)
	execSQL(t, pool, `SELECT webhooks.rescue_leases()`)
	execSQL(t, pool, `SELECT webhooks.replay(ARRAY[$1::bigint], 'retry after fix')`, id)
	claim(t, pool, "w2", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.fail($1, 'w2', 1, 'third failure')`, id)

	code, _, body := adminDo(t, nil, "GET", fmt.Sprintf("%s/api/events/%d", srv.Admin, id), "", "", nil)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var d struct {
		Payload map[string]any `json:"payload"`
		Errors  []struct {
			Attempt int       `json:"attempt"`
			At      time.Time `json:"at"`
			Error   string    `json:"error"`
		} `json:"errors"`
		Replays []struct{ Reason string } `json:"replays"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Errors) != 3 || d.Errors[0].Error != "first failure" || !strings.Contains(d.Errors[1].Error, "lease of w expired") ||
		d.Errors[2].Error != "third failure" || d.Errors[0].Attempt != 1 || d.Errors[1].Attempt != 2 || d.Errors[2].Attempt != 1 {
		t.Fatalf("errors %+v, want first, the lease rescue, third, oldest first", d.Errors)
	}
	if len(d.Replays) != 1 || d.Replays[0].Reason != "retry after fix" || d.Payload["customer"] != "cus_9" {
		t.Fatalf("replays %+v payload %v", d.Replays, d.Payload)
	}
	// Success writes no error row.
	ok, _ := ingest(t, pool, "sume", "job_fine", "job.completed", `{}`)
	c := claim(t, pool, "w3", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.complete($1, 'w3', $2)`, ok, c[0].Attempts)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.event_errors WHERE event_id = $1`, ok); n != 0 {
		t.Fatalf("a success wrote %d error rows", n)
	}
	execSQL(t, pool, `DELETE FROM webhooks.events WHERE id = $1`, id)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.event_errors WHERE event_id = $1`, id); n != 0 {
		t.Fatalf("%d error rows outlived their event", n)
	}
}

// TestPauseProvider: a paused provider's events stay pending while another
// provider's are processed; resume lets them run; both are audited.
// TestPauseProvider pauses a provider under both lease modes: claim()
// (two-phase) and _lock_pending() (row lock) must each leave its events
// pending.
func TestPauseProvider(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"row-lock", "two-phase"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testPauseProvider(t, mode)
		})
	}
}

func testPauseProvider(t *testing.T, mode string) {
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	handled := map[string]int{}
	var mu sync.Mutex
	h := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		mu.Lock()
		handled[ev.Provider]++
		mu.Unlock()
		return nil
	})
	srv := startServer(t, conf.URL(), runner.Config{Handler: h, LeaseMode: mode, Workers: 2, PollInterval: 100 * time.Millisecond, AdminToken: testAdminToken}, sumeOnly)
	code, _, body := adminDo(t, nil, "POST", srv.Admin+"/api/providers/stripe/pause", testAdminToken, `{"reason": "fixing the invoice handler"}`, nil)
	if code != 200 {
		t.Fatalf("pause: %d %s", code, body)
	}
	if code, _, _ := adminDo(t, nil, "POST", srv.Admin+"/api/providers/stripe/pause", testAdminToken, `{"reason": " "}`, nil); code != 400 {
		t.Fatalf("pause without a reason: %d", code)
	}
	ingestMany(t, pool, "stripe", "st_", "invoice.paid", 20, "", "")
	ingestMany(t, pool, "sume", "su_", "job.completed", 20, "", "")
	waitFor(t, 20*time.Second, "sume's events processed", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'sume' AND status = 'processed'`) == 20
	})
	time.Sleep(500 * time.Millisecond)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'stripe' AND status = 'pending' AND attempts = 0`); n != 20 {
		t.Fatalf("%d of stripe's 20 events still pending and unclaimed while paused", n)
	}
	_, ev, _ := getEvents(t, srv.Admin, testAdminToken, url.Values{})
	_ = ev
	code, _, body = adminDo(t, nil, "GET", srv.Admin+"/api/status", testAdminToken, "", nil)
	if code != 200 || !strings.Contains(body, `"fixing the invoice handler"`) {
		t.Fatalf("/api/status does not say stripe is paused: %s", body)
	}
	if code, _, _ := adminDo(t, nil, "POST", srv.Admin+"/api/providers/stripe/resume", testAdminToken, "", nil); code != 200 {
		t.Fatalf("resume: %d", code)
	}
	waitFor(t, 20*time.Second, "stripe's events processed after resume", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'stripe' AND status = 'processed'`) == 20
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.provider_pauses WHERE provider = 'stripe'`); n != 2 {
		t.Fatalf("%d audit rows, want pause and resume", n)
	}
}

// TestEventTimelineEveryAttempt: the timeline of GET /api/events/{id} and of
// the event page lists every attempt of every run: the failures with their
// time and error, the latest claim at claimed_at, and an attempt with no
// recorded failure (here a release) as such, without a time.
func TestEventTimelineEveryAttempt(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	retry := func(id int64) { execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() WHERE id = $1`, id) }

	// Failed twice, then processed.
	a, _ := ingest(t, pool, "sume", "job_tl_a", "job.completed", `{}`)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.fail($1, 'w', 1, 'first boom')`, a)
	retry(a)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.fail($1, 'w', 2, 'second boom')`, a)
	retry(a)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.complete($1, 'w', 3)`, a)

	// Released (no failure), failed, replayed, claimed again.
	b, _ := ingest(t, pool, "sume", "job_tl_b", "job.completed", `{}`)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.release($1, 'w', 1)`, b)
	retry(b)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.fail($1, 'w', 2, 'b boom')`, b)
	execSQL(t, pool, `SELECT webhooks.replay(ARRAY[$1::bigint], 'after the fix')`, b)
	claim(t, pool, "w9", 1, "1 minute")

	type line struct {
		At      *time.Time `json:"at"`
		What    string     `json:"what"`
		Detail  string     `json:"detail"`
		Attempt int        `json:"attempt"`
		Kind    string     `json:"kind"`
	}
	timeline := func(id int64) []line {
		code, _, body := adminDo(t, nil, "GET", fmt.Sprintf("%s/api/events/%d", srv.Admin, id), "", "", nil)
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		var d struct {
			Errors   []struct{ Attempt int } `json:"errors"`
			Timeline []line                  `json:"timeline"`
		}
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err)
		}
		return d.Timeline
	}
	summary := func(tl []line) string {
		var s []string
		for _, l := range tl {
			at := "-"
			if l.At != nil {
				at = "t"
			}
			s = append(s, fmt.Sprintf("%s %d %s %s", l.Kind, l.Attempt, at, l.Detail))
		}
		return strings.Join(s, " | ")
	}
	for _, tc := range []struct {
		id   int64
		want string
	}{
		{a, "received 0 t from webhook | failed 1 t first boom | failed 2 t second boom | claimed 3 t  | processed 3 t "},
		{b, "received 0 t from webhook | unrecorded 1 -  | failed 2 t b boom | replayed 0 t after the fix | claimed 1 t "},
	} {
		if got := summary(timeline(tc.id)); got != tc.want {
			t.Errorf("event %d timeline:\n got %s\nwant %s", tc.id, got, tc.want)
		}
	}
	pages := map[int64][]string{
		a: {"attempt 1 failed", "first boom", "attempt 2 failed", "second boom", "attempt 3 claimed", "attempt 3 processed"},
		b: {"attempt 1: claimed; no failure recorded", "time not recorded", "attempt 2 failed", "after the fix", "attempt 1 claimed by w9"},
	}
	for id, want := range pages {
		code, _, body := adminDo(t, nil, "GET", fmt.Sprintf("%s/events/%d", srv.Admin, id), "", "", nil)
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("event %d page lacks %q", id, w)
			}
		}
	}
}

// TestStatusShowsBackfillCheckpoints: GET /api/status and the console home
// show each provider's event-log backfill from webhooks.backfill_checkpoints:
// how far it has read and how long ago, the last complete pass (none for a
// first pass cut short), the last pass's counts, the totals, the last error.
func TestStatusShowsBackfillCheckpoints(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	execSQL(t, pool, `INSERT INTO webhooks.backfill_checkpoints
		(provider, read_until, completed_at, last_pass_at, last_listed, last_recovered, last_error, listed_total, recovered_total) VALUES
		('stripe', now() - interval '90 seconds', now() - interval '60 seconds', now() - interval '60 seconds', 120, 3, NULL, 5000, 17),
		('github', now() - interval '72 hours', now() - interval '30 seconds', now() - interval '30 seconds', 40, 0, 'deliveries: HTTP 401', 40, 0)`)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	code, _, body := adminDo(t, nil, "GET", srv.Admin+"/api/status", testAdminToken, "", nil)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var st struct {
		Backfill []map[string]any `json:"backfill"`
		Errors   []string         `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Backfill) != 2 || len(st.Errors) != 0 {
		t.Fatalf("backfill %v errors %v, want github and stripe", st.Backfill, st.Errors)
	}
	gh, sp := st.Backfill[0], st.Backfill[1]
	age := func(m map[string]any) float64 { f, _ := m["checkpoint_age_seconds"].(float64); return f }
	if sp["provider"] != "stripe" || age(sp) < 89 || age(sp) > 150 || sp["last_complete_pass_at"] == nil || sp["last_error"] != nil ||
		sp["last_listed"] != 120.0 || sp["last_recovered"] != 3.0 || sp["listed_total"] != 5000.0 || sp["recovered_total"] != 17.0 ||
		sp["read_until"] == nil || sp["last_pass_at"] == nil {
		t.Errorf("stripe: %v", sp)
	}
	if gh["provider"] != "github" || age(gh) < 72*3600 || gh["last_complete_pass_at"] != nil || gh["last_error"] != "deliveries: HTTP 401" ||
		gh["last_listed"] != 40.0 || gh["recovered_total"] != 0.0 {
		t.Errorf("github: %v", gh)
	}
	code, _, page := adminDo(t, nil, "GET", srv.Admin+"/", testAdminToken, "", nil)
	if code != 200 {
		t.Fatalf("GET /: %d", code)
	}
	i := strings.Index(page, `id="backfill-state"`)
	if i < 0 {
		t.Fatalf("the home page has no backfill table")
	}
	table := page[i:]
	table = table[:strings.Index(table, "</table>")]
	for _, want := range []string{"stripe", "120 / 3", "5000 / 17", "github", "never", "deliveries: HTTP 401", "3d ago"} {
		if !strings.Contains(table, want) {
			t.Errorf("the backfill table lacks %q:\n%s", want, table)
		}
	}
}
