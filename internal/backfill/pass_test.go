package backfill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// quietLogger discards everything.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestBackfillOutcomes: every answer the Sume API can give, against a real
// database: what backfill writes (an event with source 'backfill', a
// tombstone, a later deadline) or, on every kind of failure, that it
// changes nothing.
func TestBackfillOutcomes(t *testing.T) {
	t.Parallel()
	const job = "job_1"
	completed := `{"job_id": "job_1", "status": "COMPLETED", "output": {"url": "s3://x"}}`
	type want struct {
		eventType  string // "" = no event
		tombstone  bool
		postponed  bool
		report     Report
		requests   int
		errIs      error
		minBetween time.Duration // least time between the first two requests
	}
	cases := []struct {
		name    string
		replies []fakeReply
		key     string // the key the runner sends; "" = the right one
		tune    func(*Options)
		want    want
	}{
		{"completed", []fakeReply{ok200(completed)},
			"", nil, want{eventType: "job.completed", report: Report{Ingested: 1}, requests: 1}},
		{"failed", []fakeReply{ok200(`{"job_id": "job_1", "status": "ERROR", "error": {"code": "oom", "message": "out of memory"}}`)},
			"", nil, want{eventType: "job.failed", report: Report{Ingested: 1}, requests: 1}},
		{"failed without an error object", []fakeReply{ok200(`{"job_id": "job_1", "status": "ERROR"}`)},
			"", nil, want{eventType: "job.failed", report: Report{Ingested: 1}, requests: 1}},
		{"canceled, spelled CANCELED", []fakeReply{ok200(`{"job_id": "job_1", "status": "CANCELED"}`)},
			"", nil, want{eventType: "job.canceled", report: Report{Ingested: 1}, requests: 1}},
		{"canceled, spelled ERROR + error.code canceled", []fakeReply{ok200(`{"job_id": "job_1", "status": "ERROR", "error": {"code": "canceled"}}`)},
			"", nil, want{eventType: "job.canceled", report: Report{Ingested: 1}, requests: 1}},
		{"running", []fakeReply{ok200(`{"job_id": "job_1", "status": "IN_PROGRESS"}`)},
			"", nil, want{postponed: true, report: Report{Postponed: 1}, requests: 1}},
		{"queued", []fakeReply{ok200(`{"job_id": "job_1", "status": "IN_QUEUE"}`)},
			"", nil, want{postponed: true, report: Report{Postponed: 1}, requests: 1}},
		{"unknown to the provider (404)", nil,
			"", nil, want{tombstone: true, report: Report{Tombstoned: 1}, requests: 1}},
		{"500 then success", []fakeReply{{status: 500, body: `{}`}, ok200(completed)},
			"", nil, want{eventType: "job.completed", report: Report{Ingested: 1}, requests: 2}},
		{"502, 503 then success", []fakeReply{{status: 502}, {status: 503}, ok200(completed)},
			"", nil, want{eventType: "job.completed", report: Report{Ingested: 1}, requests: 3}},
		{"429 with Retry-After, then success", []fakeReply{{status: 429, retryAfter: "1"}, ok200(completed)},
			"", func(o *Options) { o.RetryMax = 5 * time.Second },
			want{eventType: "job.completed", report: Report{Ingested: 1}, requests: 2, minBetween: time.Second}},
		{"429 with a Retry-After beyond the cap", []fakeReply{{status: 429, retryAfter: "120"}, ok200(completed)},
			"", nil, want{report: Report{Failed: 1}, requests: 1}},
		{"5xx every time", []fakeReply{{status: 503}},
			"", nil, want{report: Report{Failed: 1}, requests: 3}},
		{"timeout every time", []fakeReply{{block: true}},
			"", func(o *Options) { o.RequestTimeout = 100 * time.Millisecond; o.MaxAttempts = 2 },
			want{report: Report{Failed: 1}, requests: 2}},
		{"timeout then success", []fakeReply{{block: true}, ok200(completed)},
			"", func(o *Options) { o.RequestTimeout = 100 * time.Millisecond },
			want{eventType: "job.completed", report: Report{Ingested: 1}, requests: 2}},
		{"malformed JSON", []fakeReply{ok200(`{"job_id": "job_1", "status": `)},
			"", nil, want{report: Report{Malformed: 1}, requests: 1}},
		{"JSON that is not an object", []fakeReply{ok200(`["COMPLETED"]`)},
			"", nil, want{report: Report{Malformed: 1}, requests: 1}},
		{"no status", []fakeReply{ok200(`{"job_id": "job_1"}`)},
			"", nil, want{report: Report{Malformed: 1}, requests: 1}},
		{"another job's status", []fakeReply{ok200(`{"job_id": "job_2", "status": "COMPLETED"}`)},
			"", nil, want{report: Report{Malformed: 1}, requests: 1}},
		{"unexpected 400", []fakeReply{{status: 400, body: `{}`}},
			"", nil, want{report: Report{Failed: 1}, requests: 1}},
		{"wrong API key (401)", []fakeReply{ok200(completed)},
			"wrong-key", nil, want{report: Report{Unauthorized: 1}, requests: 1, errIs: ErrUnauthorized}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t, 4)
			ctx := context.Background()
			fake := newFakeSume(t, "right-key", map[string][]fakeReply{job: tc.replies})
			key := "right-key"
			if tc.key != "" {
				key = tc.key
			}
			apis := map[string]StatusAPI{"sume": mustSume(t, "sume", fake.URL, key)}
			dbExec(t, pool, `SELECT webhooks.expect('sume', $1, now() - interval '1 minute')`, job)
			var deadlineBefore time.Time
			if err := pool.QueryRow(ctx, `SELECT deadline FROM webhooks.expectations`).Scan(&deadlineBefore); err != nil {
				t.Fatal(err)
			}
			var waits []time.Duration
			opts := fastOptions(&waits)
			if tc.tune != nil {
				tc.tune(&opts)
			}

			report, err := Run(ctx, pool, apis, opts)

			if tc.want.errIs != nil {
				var authErr *AuthError
				if !errors.Is(err, tc.want.errIs) || !errors.As(err, &authErr) || authErr.Provider != "sume" || authErr.StatusCode != 401 {
					t.Fatalf("Run error = %v, want an *AuthError for sume matching %v", err, tc.want.errIs)
				}
			} else if err != nil {
				t.Fatalf("Run: %v", err)
			}
			wantReport := tc.want.report
			wantReport.Gaps, wantReport.Requests = 1, tc.want.requests
			if !reflect.DeepEqual(report, wantReport) {
				t.Errorf("report %+v, want %+v", report, wantReport)
			}
			if hits := fake.requests(job); len(hits) != tc.want.requests {
				t.Errorf("the API saw %d requests, want %d", len(hits), tc.want.requests)
			} else if tc.want.minBetween > 0 && hits[1].Sub(hits[0]) < tc.want.minBetween {
				t.Errorf("retried after %s, before the Retry-After of %s", hits[1].Sub(hits[0]), tc.want.minBetween)
			}

			// The event.
			if tc.want.eventType == "" {
				if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 0 {
					t.Errorf("%d events written, want none", n)
				}
			} else {
				var eventType, source, status string
				var same bool
				err := pool.QueryRow(ctx, `SELECT event_type, source, status, payload = $2::jsonb FROM webhooks.events
					WHERE provider = 'sume' AND external_id = $1`, job, lastBody(tc.replies)).Scan(&eventType, &source, &status, &same)
				if err != nil {
					t.Fatalf("event: %v", err)
				}
				if eventType != tc.want.eventType || source != "backfill" || status != "pending" || !same {
					t.Errorf("event (%s, source %s, %s, payload is the status response: %v), want (%s, backfill, pending, true)",
						eventType, source, status, same, tc.want.eventType)
				}
			}
			// The tombstone.
			var reason string
			err = pool.QueryRow(ctx, `SELECT coalesce(max(reason), '') FROM webhooks.tombstones`).Scan(&reason)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.tombstone != (reason == "unknown to provider") || (!tc.want.tombstone && reason != "") {
				t.Errorf("tombstone reason %q, want tombstoned: %v", reason, tc.want.tombstone)
			}
			// The expectation.
			var deadline time.Time
			var checks int
			var future bool
			if err := pool.QueryRow(ctx, `SELECT deadline, checks, deadline > now() FROM webhooks.expectations`).Scan(&deadline, &checks, &future); err != nil {
				t.Fatal(err)
			}
			if tc.want.postponed {
				if !future || checks != 1 {
					t.Errorf("expectation deadline %s (in the future: %v), checks %d; want postponed once", deadline, future, checks)
				}
			} else if !deadline.Equal(deadlineBefore) || checks != 0 {
				t.Errorf("expectation changed: deadline %s → %s, checks %d", deadlineBefore, deadline, checks)
			}
			if tc.want.minBetween > 0 && (len(waits) == 0 || waits[0] < tc.want.minBetween) {
				t.Errorf("waited %v between attempts, want at least %s", waits, tc.want.minBetween)
			}
		})
	}
}

// TestBackfillAuthErrorStopsOnlyThatProvider: a provider that refuses the
// key gets one request, not one per gap, nothing of it is tombstoned, and the
// other providers' gaps are still settled.
func TestBackfillAuthErrorStopsOnlyThatProvider(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	script := map[string][]fakeReply{}
	for i := range 5 {
		id := fmt.Sprintf("job_%d", i)
		script[id] = []fakeReply{ok200(fmt.Sprintf(`{"job_id": %q, "status": "COMPLETED"}`, id))}
		dbExec(t, pool, `SELECT webhooks.expect('bad', $1, now() - interval '1 minute')`, id)
		dbExec(t, pool, `SELECT webhooks.expect('good', $1, now() - interval '1 minute')`, id)
	}
	fake := newFakeSume(t, "right-key", script)
	apis := map[string]StatusAPI{
		"bad":  mustSume(t, "bad", fake.URL, "wrong-key"),
		"good": mustSume(t, "good", fake.URL, "right-key"),
	}
	opts := fastOptions(nil)
	opts.Concurrency = 1
	opts.Provider = "bad"
	report, err := Run(context.Background(), pool, apis, opts)
	var authErr *AuthError
	if !errors.As(err, &authErr) || authErr.Provider != "bad" {
		t.Fatalf("error %v, want an *AuthError for bad", err)
	}
	if report.Unauthorized != 1 || report.Skipped != 4 || report.Requests != 1 {
		t.Fatalf("report %+v, want 1 unauthorized request and 4 skipped gaps", report)
	}
	opts.Provider = ""
	report, err = Run(context.Background(), pool, apis, opts)
	if !errors.Is(err, ErrUnauthorized) || report.Ingested != 5 || report.Unauthorized != 1 {
		t.Fatalf("both providers: report %+v, error %v; want good's 5 ingested and bad refused", report, err)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.tombstones`); n != 0 {
		t.Fatalf("%d tombstones after a refused key", n)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'good' AND source = 'backfill'`); n != 5 {
		t.Fatalf("%d events for good, want 5", n)
	}
}

// TestBackfillWebhookFirstKeepsItsPayload: when the webhook landed while
// the API was being asked, the backfill's copy writes nothing, even though
// ingest_webhook would reconcile the still-pending row's payload.
func TestBackfillWebhookFirstKeepsItsPayload(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 2)
	ctx := context.Background()
	webhook := `{"job_id": "job_1", "event": "job.completed", "status": "COMPLETED", "output": "rich"}`
	dbExec(t, pool, `SELECT * FROM webhooks.ingest_webhook('sume', 'job_1', 'job.completed', $1::jsonb)`, webhook)
	outcome, err := ingestBackfill(ctx, pool, Gap{Provider: "sume", ExternalID: "job_1"}, Lookup{
		State: LookupTerminal, EventType: "job.completed", Payload: []byte(`{"job_id": "job_1", "status": "COMPLETED"}`)})
	if err != nil || outcome != "duplicate" {
		t.Fatalf("backfill after the webhook: %q, %v; want duplicate", outcome, err)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE source = 'webhook' AND revision = 1
		AND payload = $1::jsonb`, webhook); n != 1 {
		t.Fatalf("the webhook's row was changed by the backfill")
	}
}

// TestBackfillRacesWebhook: for each of 30 jobs, webhook deliveries and
// backfill ingests of the same job race from many goroutines. Exactly one
// row per job and exactly one "created" among all callers; a row the webhook
// created keeps the webhook's payload.
func TestBackfillRacesWebhook(t *testing.T) {
	t.Parallel()
	const jobs, each = 30, 4 // each: webhook goroutines and backfill goroutines per job
	pool := pgtest.NewPool(t, 2*each+2)
	ctx := context.Background()
	var mu sync.Mutex
	created := map[string]int{}
	var errs []error
	for j := range jobs {
		id := fmt.Sprintf("job_%d", j)
		webhook := fmt.Sprintf(`{"job_id": %q, "event": "job.completed", "status": "COMPLETED", "via": "webhook"}`, id)
		backfill := fmt.Sprintf(`{"job_id": %q, "status": "COMPLETED"}`, id)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 2 * each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var outcome string
				var err error
				if i%2 == 0 {
					err = pool.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_webhook('sume', $1, 'job.completed', $2::jsonb)`,
						id, webhook).Scan(&outcome)
				} else {
					outcome, err = ingestBackfill(ctx, pool, Gap{Provider: "sume", ExternalID: id},
						Lookup{State: LookupTerminal, EventType: "job.completed", Payload: []byte(backfill)})
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if outcome == "created" {
					created[id]++
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(errors.Join(errs...))
		}
		var rows int64
		var source string
		var webhookPayload bool
		err := pool.QueryRow(ctx, `SELECT count(*) OVER (), source, payload = $2::jsonb FROM webhooks.events
			WHERE provider = 'sume' AND external_id = $1`, id, webhook).Scan(&rows, &source, &webhookPayload)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if rows != 1 || created[id] != 1 {
			t.Fatalf("%s: %d rows, %d created; want exactly one of each", id, rows, created[id])
		}
		if source == "webhook" && !webhookPayload {
			t.Fatalf("%s: the webhook's row lost its payload to a backfill", id)
		}
	}
}

// TestBackfillPassesRaceWebhooks: whole backfill passes run while the
// webhooks of the same jobs arrive: every job ends with exactly one row.
func TestBackfillPassesRaceWebhooks(t *testing.T) {
	t.Parallel()
	const jobs = 40
	pool := pgtest.NewPool(t, 12)
	ctx := context.Background()
	script := map[string][]fakeReply{}
	for j := range jobs {
		id := fmt.Sprintf("job_%d", j)
		script[id] = []fakeReply{ok200(fmt.Sprintf(`{"job_id": %q, "status": "COMPLETED"}`, id))}
		dbExec(t, pool, `SELECT webhooks.expect('sume', $1, now() - interval '1 minute')`, id)
	}
	fake := newFakeSume(t, "k", script)
	apis := map[string]StatusAPI{"sume": mustSume(t, "sume", fake.URL, "k")}
	var wg sync.WaitGroup
	errs := make(chan error, jobs+3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := Run(ctx, pool, apis, fastOptions(nil))
			errs <- err
		}()
	}
	for j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("job_%d", j)
			_, err := pool.Exec(ctx, `SELECT * FROM webhooks.ingest_webhook('sume', $1, 'job.completed', $2::jsonb)`,
				id, fmt.Sprintf(`{"job_id": %q, "event": "job.completed", "status": "COMPLETED"}`, id))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != jobs {
		t.Fatalf("%d events for %d jobs", n, jobs)
	}
	if n := dbInt(t, pool, `SELECT count(DISTINCT external_id) FROM webhooks.events`); n != jobs {
		t.Fatalf("%d distinct jobs, want %d", n, jobs)
	}
}

// TestBackfillOnlyConfiguredProviders: a status_url on the API's own origin
// is polled; a provider PGINBOX_PROVIDERS does not list, one without an API
// URL (even with a key) and one of a kind without a status API are never
// contacted, whatever their expectations' status_url says.
func TestBackfillOnlyConfiguredProviders(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	fake := newFakeSume(t, "sume-key", map[string][]fakeReply{
		"job_9": {ok200(`{"job_id": "job_9", "status": "COMPLETED"}`)},
		"l_1":   {ok200(`{"job_id": "l_1", "status": "COMPLETED"}`)},
		"n_1":   {ok200(`{"job_id": "n_1", "status": "COMPLETED"}`)},
		"gh_1":  {ok200(`{"job_id": "gh_1", "status": "COMPLETED"}`)},
	})
	dbExec(t, pool, `SELECT webhooks.expect('sume', 'job_9', now() - interval '1 minute', $1)`, fake.URL+"/custom/job_9")
	dbExec(t, pool, `SELECT webhooks.expect('legacy', 'l_1', now() - interval '1 minute', $1)`, fake.URL+"/custom/l_1")
	dbExec(t, pool, `SELECT webhooks.expect('nourl', 'n_1', now() - interval '1 minute', $1)`, fake.URL+"/custom/n_1")
	dbExec(t, pool, `SELECT webhooks.expect('gh', 'gh_1', now() - interval '1 minute', $1)`, fake.URL+"/custom/gh_1")
	env := map[string]string{"PGINBOX_API_URL_SUME": fake.URL, "PGINBOX_API_KEY_SUME": "sume-key",
		"PGINBOX_API_KEY_NOURL": "sume-key", "PGINBOX_API_URL_LEGACY": fake.URL, "PGINBOX_API_KEY_LEGACY": "sume-key"}
	apis, err := APIs(map[string]string{"sume": "sume", "nourl": "sume", "gh": "github"},
		envconfig.Endpoints(func(k string) string { return env[k] }))
	if err != nil {
		t.Fatal(err)
	}
	report, err := Run(context.Background(), pool, apis, fastOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if report.Gaps != 4 || report.Ingested != 1 || report.Skipped != 3 || report.Requests != 1 {
		t.Fatalf("report %+v, want 1 ingested (status_url) and 3 skipped", report)
	}
	for _, id := range []string{"l_1", "n_1", "gh_1"} {
		if n := len(fake.requests(id)); n != 0 {
			t.Errorf("%s: %d requests to a provider that has no API configured", id, n)
		}
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'sume' AND external_id = 'job_9'
		AND source = 'backfill' AND event_type = 'job.completed'`); n != 1 {
		t.Fatal("job_9 was not backfilled from its status_url")
	}
}

// TestBackfillBoundsConcurrencyAndRate: never more lookups in flight than
// Concurrency, and no faster than Rate per provider (a lower bound on the
// spread of the requests, so a slow machine cannot fail it).
func TestBackfillBoundsConcurrencyAndRate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		concurrency int
		rate        float64
		delay       time.Duration
	}{
		{"concurrency", 3, 1000, 50 * time.Millisecond},
		{"rate", 12, 20, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t, 16)
			script := map[string][]fakeReply{}
			for j := range 12 {
				id := fmt.Sprintf("job_%d", j)
				script[id] = []fakeReply{ok200(fmt.Sprintf(`{"job_id": %q, "status": "IN_PROGRESS"}`, id))}
				dbExec(t, pool, `SELECT webhooks.expect('sume', $1, now() - interval '1 minute')`, id)
			}
			fake := newFakeSume(t, "k", script)
			fake.delay = tc.delay
			apis := map[string]StatusAPI{"sume": mustSume(t, "sume", fake.URL, "k")}
			opts := fastOptions(nil)
			opts.Concurrency = tc.concurrency
			opts.Rate = tc.rate
			report, err := Run(context.Background(), pool, apis, opts)
			if err != nil || report.Postponed != 12 {
				t.Fatalf("report %+v, %v", report, err)
			}
			fake.mu.Lock()
			maxIn := fake.maxIn
			fake.mu.Unlock()
			if maxIn > tc.concurrency {
				t.Fatalf("%d lookups in flight at once, want at most %d", maxIn, tc.concurrency)
			}
			// From the first request to the last, as the API saw them.
			var first, last time.Time
			for id := range script {
				for _, at := range fake.requests(id) {
					if first.IsZero() || at.Before(first) {
						first = at
					}
					if at.After(last) {
						last = at
					}
				}
			}
			// Slots are 1/rate apart from the first; the first request may
			// still be on its way when a later one is not, so allow half.
			if spread, least := last.Sub(first), time.Duration(float64(11*time.Second)/tc.rate/2); spread < least {
				t.Fatalf("12 requests at %v/s arrived within %s, less than %s", tc.rate, spread, least)
			}
		})
	}
}

// TestBackfillContextCanceled: a canceled context ends the pass with its
// error and writes nothing.
func TestBackfillContextCanceled(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 2)
	fake := newFakeSume(t, "k", map[string][]fakeReply{"job_1": {{block: true}}})
	dbExec(t, pool, `SELECT webhooks.expect('sume', 'job_1', now() - interval '1 minute')`)
	apis := map[string]StatusAPI{"sume": mustSume(t, "sume", fake.URL, "k")}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, pool, apis, fastOptions(nil))
	if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(fmt.Sprint(err), "deadline") {
		t.Fatalf("error %v, want the context's", err)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.tombstones`) + dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 0 {
		t.Fatalf("%d rows written by a canceled pass", n)
	}
}
