package backfill

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/provider/paddle"
	"github.com/pginbox/pginbox/internal/provider/paddle/paddlefake"
)

// paddleEvents returns n events ending at end, per events sharing each
// second, with ids ascending in time as Paddle's are.
func paddleEvents(prefix, n, per int, end time.Time) []paddlefake.Event {
	evs := make([]paddlefake.Event, n)
	for i := range evs {
		at := end.Add(-time.Duration((n-i)/per) * time.Second)
		evs[i] = paddlefake.Event{ID: paddlefake.ID(at, prefix*100000+i), OccurredAt: at,
			Type: []string{"transaction.completed", "subscription.updated", "customer.created"}[i%3]}
	}
	return evs
}

func mustPaddle(t *testing.T, f *paddlefake.Server, key string) *paddle.EventLog {
	t.Helper()
	l, err := paddle.NewEventLog("paddle", f.URL, key)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestPaddleLogRecoversEverything: 1,050 events of the last hours over 6
// pages of 200 (10 per second, so ties straddle page boundaries), a tenth
// of them arrived as webhooks, and 300 events older than the lookback. One
// pass stores every missing recent event exactly once with source
// 'backfill', its event_id, event_type and event object, and stops at the
// first page reaching before the lookback (Paddle cannot filter by time);
// every request asks for id[DESC] and 200 a page and pages with the after
// of meta.pagination.next; the next URL (on api.paddle.com) is never
// requested. The next pass reads one page.
func TestPaddleLogRecoversEverything(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	f := paddlefake.New("pdl_apikey_events_read")
	defer f.Close()
	evs := paddleEvents(1, 1050, 10, time.Now().Add(-time.Hour))
	f.Add(evs...)
	f.Add(paddleEvents(2, 300, 10, time.Now().Add(-10*time.Hour))...) // before the 3h lookback
	for i := 0; i < len(evs); i += 10 {
		dbExec(t, pool, `SELECT webhooks.ingest_webhook('paddle', $1, $2, $3::jsonb)`, evs[i].ID, evs[i].Type, string(evs[i].JSON()))
	}
	el := mustPaddle(t, f, "pdl_apikey_events_read")
	rep, err := RunLog(context.Background(), pool, el, logOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Complete || rep.Pages != 6 || rep.Listed != 1050 || rep.Recovered != 945 || rep.Duplicates != 105 || rep.Requests != 6 {
		t.Fatalf("report %+v", rep)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'paddle'`); n != 1050 {
		t.Fatalf("%d events stored, want 1050 (none older than the lookback)", n)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'paddle' AND source = 'backfill'
		AND event_type = payload->>'event_type' AND external_id = payload->>'event_id' AND payload->'data' ? 'customer_id'`); n != 945 {
		t.Fatalf("%d backfilled events carry their event_id, event_type and event object, want 945", n)
	}
	at, lastErr := checkpointOf(t, pool, "paddle")
	if !at.Equal(rep.To) || lastErr != "" {
		t.Fatalf("checkpoint %s (%q), want %s", at, lastErr, rep.To)
	}
	queries := f.Queries()
	for i, q := range queries {
		v, _ := url.ParseQuery(q)
		if v.Get("order_by") != "id[DESC]" || v.Get("per_page") != "200" {
			t.Fatalf("query %q does not ask for id[DESC], 200 per page", q)
		}
		// Page i+1 starts after the last id of page i (the newest first).
		if want := ""; i == 0 && v.Get("after") != want {
			t.Fatalf("first query %q has an after", q)
		} else if i > 0 && v.Get("after") != evs[len(evs)-200*i].ID {
			t.Fatalf("query %d %q: after %q, want %q", i, q, v.Get("after"), evs[len(evs)-200*i].ID)
		}
	}

	before := f.Requests()
	rep2, err := RunLog(context.Background(), pool, el, logOptions())
	if err != nil {
		t.Fatal(err)
	}
	if f.Requests()-before != 1 || rep2.Listed != 0 || !rep2.Complete {
		t.Fatalf("steady-state pass: %d requests, %+v; want one page", f.Requests()-before, rep2)
	}
}

// TestPaddleLogLateEvent: Paddle's list is eventually consistent: an event
// that shows up after the pass read past its time, but within the overlap,
// is recovered by the next pass.
func TestPaddleLogLateEvent(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	f := paddlefake.New("k")
	defer f.Close()
	f.Add(paddleEvents(1, 50, 1, time.Now().Add(-5*time.Minute))...)
	el := mustPaddle(t, f, "k")
	if rep, err := RunLog(context.Background(), pool, el, logOptions()); err != nil || rep.Recovered != 50 {
		t.Fatalf("first pass %+v, %v", rep, err)
	}
	at, _ := checkpointOf(t, pool, "paddle")
	late := at.Add(-30 * time.Second)
	f.Add(paddlefake.Event{ID: paddlefake.ID(late, 999999), Type: "transaction.paid", OccurredAt: late})
	rep, err := RunLog(context.Background(), pool, el, logOptions())
	if err != nil || rep.Recovered != 1 {
		t.Fatalf("second pass %+v, %v; want the late event recovered", rep, err)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = $1 AND source = 'backfill'`, paddlefake.ID(late, 999999)); n != 1 {
		t.Fatal("the late event is not stored")
	}
}

// TestPaddleLogFailures: 503s and a 429 with Retry-After in the middle of
// the pagination are retried and the pass completes; a 502 that persists
// ends the pass with the checkpoint where it was; a wrong key (403) ingests
// nothing and is an *AuthError.
func TestPaddleLogFailures(t *testing.T) {
	t.Parallel()
	t.Run("retried", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		f := paddlefake.New("k")
		defer f.Close()
		f.Add(paddleEvents(1, 700, 7, time.Now().Add(-time.Hour))...)
		f.Fail = func(n int, _ *http.Request) (int, string) {
			switch n {
			case 2, 3:
				return http.StatusServiceUnavailable, ""
			case 5:
				return http.StatusTooManyRequests, "1"
			}
			return 0, ""
		}
		opts := logOptions()
		opts.RetryMax = 2 * time.Second
		rep, err := RunLog(context.Background(), pool, mustPaddle(t, f, "k"), opts)
		if err != nil || !rep.Complete || rep.Recovered != 700 || rep.Requests != 7 {
			t.Fatalf("report %+v, %v; want 700 recovered in 4 pages + 3 retries", rep, err)
		}
	})
	t.Run("persistent 502 leaves the checkpoint", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		f := paddlefake.New("k")
		defer f.Close()
		f.Add(paddleEvents(1, 300, 7, time.Now().Add(-time.Hour))...)
		el := mustPaddle(t, f, "k")
		if _, err := RunLog(context.Background(), pool, el, logOptions()); err != nil {
			t.Fatal(err)
		}
		at, _ := checkpointOf(t, pool, "paddle")
		f.Add(paddleEvents(3, 300, 50, at)...)
		base := f.Requests()
		f.Fail = func(n int, _ *http.Request) (int, string) {
			if n > base+1 { // the second page and every retry of it
				return http.StatusBadGateway, ""
			}
			return 0, ""
		}
		rep, err := RunLog(context.Background(), pool, el, logOptions())
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || rep.Complete {
			t.Fatalf("persistent 502: %+v, %v", rep, err)
		}
		at2, lastErr := checkpointOf(t, pool, "paddle")
		if !at2.Equal(at) || !strings.Contains(lastErr, "HTTP 502") {
			t.Fatalf("checkpoint %s (%q) after a pass cut short, want %s kept", at2, lastErr, at)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		f := paddlefake.New("right")
		defer f.Close()
		f.Add(paddleEvents(1, 10, 1, time.Now().Add(-time.Hour))...)
		rep, err := RunLog(context.Background(), pool, mustPaddle(t, f, "wrong"), logOptions())
		var auth *AuthError
		if !errors.As(err, &auth) || !errors.Is(err, ErrUnauthorized) || rep.Complete || rep.Requests != 1 {
			t.Fatalf("wrong key: %+v, %v; want an *AuthError after one request", rep, err)
		}
		if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 0 {
			t.Fatalf("%d events ingested with a refused key", n)
		}
	})
}

// TestPaddleLogPages: a page without meta.pagination.has_more is not
// applied at all (the pages before it are) and leaves the checkpoint; on a
// readable page, events that cannot be stored (no event_type, no
// occurred_at, too deep, a \u0000 Postgres refuses) are passed over and
// counted, the others stored, and the checkpoint moves; without a next URL,
// the last event_id is the cursor.
func TestPaddleLogPages(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	ev := func(id, typ, data string) string {
		return fmt.Sprintf(`{"event_id": %q, "event_type": %q, "occurred_at": %q, "data": %s}`, id, typ, at, data)
	}
	t.Run("malformed page", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("after") == "" {
				fmt.Fprintf(w, `{"data": [%s], "meta": {"pagination": {"per_page": 200, "has_more": true, "next": "https://api.paddle.com/events?after=evt_a"}}}`, ev("evt_a", "t.x", `{}`))
				return
			}
			fmt.Fprintf(w, `{"data": [%s, %s], "meta": {"pagination": {"per_page": 200}}}`, ev("evt_0b", "t.x", `{}`), ev("evt_0c", "t.x", `{}`))
		}))
		defer srv.Close()
		el, _ := paddle.NewEventLog("paddle", srv.URL, "k")
		rep, err := RunLog(context.Background(), pool, el, logOptions())
		var malformed *MalformedError
		if !errors.As(err, &malformed) || rep.Malformed != 1 || rep.Complete || rep.Recovered != 1 {
			t.Fatalf("malformed page: %+v, %v", rep, err)
		}
		if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id IN ('evt_0b', 'evt_0c')`); n != 0 {
			t.Fatal("the malformed page was half-applied")
		}
		if _, lastErr := checkpointOf(t, pool, "paddle"); !strings.Contains(lastErr, "malformed") {
			t.Fatalf("last_error %q", lastErr)
		}
	})
	t.Run("unstorable events", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		var afters []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			afters = append(afters, r.URL.Query().Get("after"))
			if r.URL.Query().Get("after") == "" {
				fmt.Fprintf(w, `{"data": [%s, %s, %s], "meta": {"pagination": {"per_page": 200, "has_more": true, "next": null}}}`,
					ev("evt_9a", "transaction.paid", `{"n": 1}`),
					ev("evt_9b", "transaction.paid", deepJSON(70)),
					fmt.Sprintf(`{"event_id": "evt_9c", "occurred_at": %q}`, at))
				return
			}
			fmt.Fprintf(w, `{"data": [%s, %s, %s], "meta": {"pagination": {"per_page": 200, "has_more": false, "next": null}}}`,
				ev("evt_8a", "transaction.paid", `{"name": "a\u0000b"}`),
				`{"event_id": "evt_8b", "event_type": "transaction.paid", "data": {}}`,
				ev("evt_8c", "transaction.paid", `{"n": 2}`))
		}))
		defer srv.Close()
		el, _ := paddle.NewEventLog("paddle", srv.URL, "k")
		rep, err := RunLog(context.Background(), pool, el, logOptions())
		if err != nil || !rep.Complete || rep.Skipped != 4 || rep.Recovered != 2 {
			t.Fatalf("%+v, %v; want complete, 2 stored and 4 passed over", rep, err)
		}
		if len(afters) != 2 || afters[1] != "evt_9c" {
			t.Fatalf("afters %q; want the last event_id of the first page as the cursor", afters)
		}
		if at2, lastErr := checkpointOf(t, pool, "paddle"); !at2.Equal(rep.To) || lastErr != "" {
			t.Fatalf("checkpoint %s (%q), want %s", at2, lastErr, rep.To)
		}
	})
}
