package backfill

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/provider/github"
	"github.com/pginbox/pginbox/internal/provider/github/githubfake"
	"github.com/pginbox/pginbox/internal/provider/paddle"
	"github.com/pginbox/pginbox/internal/provider/paddle/paddlefake"
	"github.com/pginbox/pginbox/internal/provider/stripe"
	"github.com/pginbox/pginbox/internal/provider/stripe/stripefake"
)

// clock is a settable clock for a Backoff.
type clock struct{ t time.Time }

func (c *clock) now() time.Time               { return c.t }
func (c *clock) advance(d time.Duration)      { c.t = c.t.Add(d) }
func (c *clock) in(t time.Time) time.Duration { return t.Sub(c.t) }

// TestBackoffFromThePassInterval: a failing pass backs its provider off for
// the base (the pass interval), doubling up to the cap, never less than a
// Retry-After; a probe that gets an answer after the API was seen failing
// ends the backoff at once; after a pass that a probe started fails again,
// an answering probe ends nothing until a probe has failed (an API that
// answers the probe but fails the pass is not given a pass at every probe);
// no probe is due while a Retry-After runs.
func TestBackoffFromThePassInterval(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)}
	b := NewBackoff(10*time.Second, 80*time.Second)
	b.now = c.now

	if d := b.Fail("stripe", 0); d != 10*time.Second || c.in(b.Until("stripe")) != 10*time.Second {
		t.Fatalf("first failure: backoff %s, until in %s; want the pass interval, 10s", d, c.in(b.Until("stripe")))
	}
	if due := b.Due(); !slices.Equal(due, []string{"stripe"}) {
		t.Fatalf("due %v, want [stripe]", due)
	}
	if b.Probed("stripe", false, 0) {
		t.Fatal("a probe without an answer ended the backoff")
	}
	if !b.Probed("stripe", true, 0) || !b.Until("stripe").IsZero() {
		t.Fatal("an answering probe did not end the backoff")
	}
	if due := b.Due(); len(due) != 0 {
		t.Fatalf("due %v while the pass the probe started is pending, want none", due)
	}

	// The pass the probe started fails: 20 s, and answering probes end
	// nothing until one fails.
	if d := b.Fail("stripe", 0); d != 20*time.Second {
		t.Fatalf("second failure: %s, want 20s", d)
	}
	for range 3 {
		c.advance(time.Second)
		if b.Probed("stripe", true, 0) {
			t.Fatal("an answering probe ended the backoff right after the pass it started failed")
		}
	}
	b.Probed("stripe", false, 0)
	if !b.Probed("stripe", true, 0) {
		t.Fatal("an answer after a failing probe did not end the backoff")
	}

	// Growth is capped; a Retry-After longer than the cap is honoured.
	for _, want := range []time.Duration{40 * time.Second, 80 * time.Second, 80 * time.Second} {
		if d := b.Fail("stripe", 0); d != want {
			t.Fatalf("backoff %s, want %s", d, want)
		}
	}
	if d := b.Fail("stripe", 5*time.Minute); d != 5*time.Minute {
		t.Fatalf("backoff with Retry-After 5m: %s", d)
	}
	if due := b.Due(); len(due) != 0 {
		t.Fatalf("due %v during a Retry-After, want none", due)
	}
	if b.Probed("stripe", true, 0) {
		t.Fatal("a probe during a Retry-After ended the backoff")
	}
	c.advance(5*time.Minute - time.Second)
	if due := b.Due(); len(due) != 0 {
		t.Fatalf("due %v a second before the Retry-After ends", due)
	}

	// A probe answered 429 with a Retry-After holds the next probe and pass.
	b2 := NewBackoff(10*time.Second, 80*time.Second)
	b2.now = c.now
	b2.Fail("gh", 0)
	b2.Probed("gh", false, time.Minute)
	if due := b2.Due(); len(due) != 0 || c.in(b2.Until("gh")) != time.Minute {
		t.Fatalf("after a probe's Retry-After 1m: due %v, until in %s; want none due, until in 1m", due, c.in(b2.Until("gh")))
	}
	c.advance(time.Minute)
	if b2.Probed("gh", true, 0) {
		t.Fatal("an answer once the backoff ran out 'ended' it: the scheduled pass runs anyway")
	}

	b.Succeed("stripe")
	if !b.Until("stripe").IsZero() || len(b.Due()) != 0 {
		t.Fatal("a pass that got an answer did not end the backoff")
	}
}

// TestProbeEventLog: a backed-off event log is probed with one request for
// its newest event only (Stripe: limit=1), never retried; a 503 leaves the
// backoff, an answer ends it; a 429's Retry-After holds the next probe; a
// provider not backed off is never probed.
func TestProbeEventLog(t *testing.T) {
	t.Parallel()
	var status atomic.Int64
	f := stripefake.New("rk_test_probe")
	f.Fail = func(int, *http.Request) (int, string) {
		switch s := int(status.Load()); s {
		case http.StatusTooManyRequests:
			return s, "120"
		default:
			return s, ""
		}
	}
	defer f.Close()
	el, err := stripe.NewEventLog("stripe", f.URL, "rk_test_probe")
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string]EventLog{"stripe": el}
	b := NewBackoff(time.Hour, time.Hour)
	ctx := context.Background()
	opts := fastOptions(nil)

	if ended := b.Probe(ctx, nil, nil, logs, opts); len(ended) != 0 || f.Requests() != 0 {
		t.Fatalf("not backed off: ended %v, %d requests; want no probe", ended, f.Requests())
	}
	b.Fail("stripe", 0)
	status.Store(http.StatusServiceUnavailable)
	if ended := b.Probe(ctx, nil, nil, logs, opts); len(ended) != 0 || f.Requests() != 1 {
		t.Fatalf("API down: ended %v after %d requests; want nothing ended after 1 request", ended, f.Requests())
	}
	status.Store(0)
	if ended := b.Probe(ctx, nil, nil, logs, opts); !slices.Equal(ended, []string{"stripe"}) || !b.Until("stripe").IsZero() {
		t.Fatalf("API back: ended %v, until %s; want [stripe], zero", ended, b.Until("stripe"))
	}
	for i, q := range f.Queries() {
		if q != "limit=1" {
			t.Fatalf("probe %d asked %q, want limit=1 only", i+1, q)
		}
	}

	b.Fail("stripe", 0) // the pass after fails again
	status.Store(http.StatusTooManyRequests)
	b.Probed("stripe", false, 0)
	if ended := b.Probe(ctx, nil, nil, logs, opts); len(ended) != 0 || f.Requests() != 3 {
		t.Fatalf("429: ended %v after %d requests", ended, f.Requests())
	}
	status.Store(0)
	if ended := b.Probe(ctx, nil, nil, logs, opts); len(ended) != 0 || f.Requests() != 3 {
		t.Fatalf("during the 429's Retry-After: ended %v, %d requests; want no probe", ended, f.Requests())
	}
}

// TestProbeStatusAPI: a backed-off status API (Sume) is probed with one
// lookup of its oldest gap that a pass may ask about (a status_url on
// another origin is passed over); a provider without such a gap is not
// probed; the probe changes nothing in the database.
func TestProbeStatusAPI(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	f := newFakeSume(t, "k", map[string][]fakeReply{
		"job_new": {ok200(`{"job_id": "job_new", "status": "COMPLETED"}`)},
	})
	apis := map[string]StatusAPI{"sume": mustSume(t, "sume", f.URL, "k")}
	b := NewBackoff(time.Hour, time.Hour)
	b.Fail("sume", 0)
	ctx := context.Background()

	dbExec(t, pool, `SELECT webhooks.expect('sume', 'job_foreign', now() - interval '2 hours', 'https://elsewhere.example/v1/jobs/job_foreign/status')`)
	if ended := b.Probe(ctx, pool, apis, nil, fastOptions(nil)); len(ended) != 0 {
		t.Fatalf("only a foreign gap: ended %v", ended)
	}
	if n := len(f.requests("job_foreign")); n != 0 {
		t.Fatalf("the foreign status_url was asked %d times", n)
	}
	dbExec(t, pool, `SELECT webhooks.expect('sume', 'job_new', now() - interval '1 minute')`)
	if ended := b.Probe(ctx, pool, apis, nil, fastOptions(nil)); !slices.Equal(ended, []string{"sume"}) {
		t.Fatalf("ended %v, want [sume]", ended)
	}
	if n := len(f.requests("job_new")); n != 1 {
		t.Fatalf("job_new asked %d times, want 1", n)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 0 {
		t.Fatalf("the probe stored %d events; the pass it starts does that", n)
	}
}

// TestRunBacksOffForRetryAfter: a 429 whose Retry-After is longer than the
// retry cap ends the gap's attempts for the pass, and the provider's
// backoff lasts at least that Retry-After, whatever the base.
func TestRunBacksOffForRetryAfter(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	f := newFakeSume(t, "k", map[string][]fakeReply{
		"job_1": {{status: http.StatusTooManyRequests, body: `{}`, retryAfter: "3600"}},
	})
	dbExec(t, pool, `SELECT webhooks.expect('sume', 'job_1', now() - interval '1 minute')`)
	b := NewBackoff(time.Second, time.Minute)
	opts := fastOptions(nil)
	opts.Backoff = b
	rep, err := Run(context.Background(), pool, map[string]StatusAPI{"sume": mustSume(t, "sume", f.URL, "k")}, opts)
	if err != nil || rep.Failed != 1 || rep.Requests != 1 {
		t.Fatalf("pass: %+v, %v; want the gap failed after one request", rep, err)
	}
	if d := time.Until(b.Until("sume")); d < 59*time.Minute {
		t.Fatalf("backoff ends in %s, want at least the Retry-After (1h)", d)
	}
	if due := b.Due(); len(due) != 0 {
		t.Fatalf("due for a probe %v during the Retry-After", due)
	}
}

// TestEventLogProbes: every event-log kind probes with one request for its
// newest entry only, which its strict fake accepts; the fake's 503 is a
// retryable *APIError (no answer), its answer nil.
func TestEventLogProbes(t *testing.T) {
	t.Parallel()
	key, pemText := githubfake.AppKey(t)
	cases := []struct {
		name  string
		start func(t *testing.T, fail func(int, *http.Request) (int, string)) (EventLog, func() int)
		query string // the probe's query, "" when the fake does not record it
	}{
		{"stripe", func(t *testing.T, fail func(int, *http.Request) (int, string)) (EventLog, func() int) {
			f := stripefake.New("k")
			f.Fail = fail
			t.Cleanup(f.Close)
			el, err := stripe.NewEventLog("stripe", f.URL, "k")
			if err != nil {
				t.Fatal(err)
			}
			return el, f.Requests
		}, "limit=1"},
		{"paddle", func(t *testing.T, fail func(int, *http.Request) (int, string)) (EventLog, func() int) {
			f := paddlefake.New("k")
			f.Fail = fail
			t.Cleanup(f.Close)
			el, err := paddle.NewEventLog("paddle", f.URL, "k")
			if err != nil {
				t.Fatal(err)
			}
			return el, f.Requests
		}, "order_by=id%5BDESC%5D&per_page=1"},
		{"github", func(t *testing.T, fail func(int, *http.Request) (int, string)) (EventLog, func() int) {
			f := githubfake.New("77", &key.PublicKey)
			var n atomic.Int64
			f.Fail = func(i int, r *http.Request) (int, string) {
				n.Add(1)
				return fail(i, r)
			}
			t.Cleanup(f.Close)
			el, err := github.NewEventLog("gh", f.URL, "77", pemText)
			if err != nil {
				t.Fatal(err)
			}
			return el, func() int { return int(n.Load()) }
		}, "per_page=1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var down atomic.Bool
			var queries []string
			var mu sync.Mutex
			el, requests := tc.start(t, func(_ int, r *http.Request) (int, string) {
				mu.Lock()
				queries = append(queries, r.URL.RawQuery)
				mu.Unlock()
				if down.Load() {
					return http.StatusServiceUnavailable, ""
				}
				return 0, ""
			})
			p, ok := el.(Prober)
			if !ok {
				t.Fatalf("%T has no Probe", el)
			}
			if err := p.Probe(context.Background()); err != nil {
				t.Fatalf("probe of an answering API: %v", err)
			}
			down.Store(true)
			var apiErr *APIError
			if err := p.Probe(context.Background()); !errors.As(err, &apiErr) || !apiErr.Retryable() {
				t.Fatalf("probe of an API answering 503: %v, want a retryable *APIError", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if requests() != 2 || !slices.Equal(queries, []string{tc.query, tc.query}) {
				t.Fatalf("%d requests %q, want 2 of %q", requests(), queries, tc.query)
			}
		})
	}
}
