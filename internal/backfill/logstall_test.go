package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/provider/github"
	"github.com/pginbox/pginbox/internal/provider/github/githubfake"
	"github.com/pginbox/pginbox/internal/provider/stripe"
	"github.com/pginbox/pginbox/internal/provider/stripe/stripefake"
)

// deepJSON returns an object nested depth levels deep.
func deepJSON(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// stripeListServer serves Stripe list pages: pages[cursor] is the data of
// the page after cursor ("" the first), followed by has_more when the
// cursor names another page.
func stripeListServer(t *testing.T, pages map[string][]string, next map[string]string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		after := r.URL.Query().Get("starting_after")
		data, ok := pages[after]
		if !ok {
			http.Error(w, `{"error": {"message": "No such event"}}`, http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"object": "list", "has_more": %v, "data": [%s]}`, next[after] != "", strings.Join(data, ","))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func stripeJSON(id, typ string, created time.Time, extra string) string {
	return fmt.Sprintf(`{"id": %q, "object": "event", "type": %q, "created": %d, "data": {"object": %s}}`, id, typ, created.Unix(), extra)
}

// TestEventLogPassesOverUnstorableEntries: listed entries that cannot be
// stored (nesting deeper than 64, \u0000 in a string, no type, refused by
// Postgres, a GitHub detail that is not a usable payload) are logged,
// counted in Skipped and passed over; every other entry is stored and the
// checkpoint moves, pass after pass.
func TestEventLogPassesOverUnstorableEntries(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(-time.Minute) // within the overlap: listed again by the second pass
	t.Run("stripe", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		// Postgres itself refuses one event (as it would a value the Go
		// checks let through).
		dbExec(t, pool, `ALTER TABLE webhooks.inbox ADD CONSTRAINT test_refused CHECK (external_id <> 'evt_refused')`)
		srv, _ := stripeListServer(t, map[string][]string{
			"": {
				stripeJSON("evt_a", "invoice.paid", at, `{"n": 1}`),
				stripeJSON("evt_deep", "invoice.paid", at, deepJSON(70)),
				stripeJSON("evt_nul", "invoice.paid", at, `{"name": "a\u0000b"}`),
				stripeJSON("evt_refused", "invoice.paid", at, `{"n": 2}`),
			},
			"evt_refused": {
				stripeJSON("evt_b", "invoice.paid", at.Add(-time.Second), `{"n": 3}`),
				fmt.Sprintf(`{"id": "evt_c", "created": %d}`, at.Unix()),
				stripeJSON("evt_d", "invoice.paid", at.Add(-2*time.Second), `{"n": 4}`),
			},
		}, map[string]string{"": "evt_refused"})
		el, err := stripe.NewEventLog("stripe", srv.URL, "k")
		if err != nil {
			t.Fatal(err)
		}
		for pass := range 2 {
			rep, err := RunLog(context.Background(), pool, el, logOptions())
			if err != nil || !rep.Complete || rep.Skipped != 4 {
				t.Fatalf("pass %d: %+v, %v; want complete with 4 entries passed over", pass, rep, err)
			}
			if pass == 0 && rep.Recovered != 3 {
				t.Fatalf("pass %d: %+v; want evt_a, evt_b and evt_d stored", pass, rep)
			}
			at2, lastErr := checkpointOf(t, pool, "stripe")
			if !at2.Equal(rep.To) || lastErr != "" {
				t.Fatalf("pass %d: checkpoint %s (%q), want %s", pass, at2, lastErr, rep.To)
			}
		}
		if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id IN ('evt_a', 'evt_b', 'evt_d')`); n != 3 {
			t.Fatalf("%d of the 3 good events stored", n)
		}
	})
	t.Run("github", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		key, pemText := githubfake.AppKey(t)
		f := githubfake.New("77", &key.PublicKey)
		defer f.Close()
		dbExec(t, pool, `ALTER TABLE webhooks.inbox ADD CONSTRAINT test_refused CHECK (external_id <> 'guid-refused')`)
		ok := json.RawMessage(`{"action": "opened", "issue": {"number": 1}}`)
		f.Add(
			githubfake.Delivery{ID: 1, GUID: "guid-ok-1", DeliveredAt: at, Event: "issues", Action: "opened", StatusCode: 502, Payload: ok},
			githubfake.Delivery{ID: 2, GUID: "guid-nul", DeliveredAt: at, Event: "issues", Action: "opened", StatusCode: 502,
				Payload: json.RawMessage(`{"action": "opened", "title": "a\u0000b"}`)},
			githubfake.Delivery{ID: 3, GUID: "guid-deep", DeliveredAt: at, Event: "issues", Action: "opened", StatusCode: 502,
				Payload: json.RawMessage(`{"action": "opened", "x": ` + deepJSON(70) + `}`)},
			githubfake.Delivery{ID: 4, GUID: "guid-refused", DeliveredAt: at, Event: "issues", Action: "opened", StatusCode: 502, Payload: ok},
			githubfake.Delivery{ID: 5, GUID: "guid-ok-2", DeliveredAt: at.Add(-time.Second), Event: "issues", Action: "opened", StatusCode: 502, Payload: ok},
		)
		el, err := github.NewEventLog("gh", f.URL, "77", pemText)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := RunLog(context.Background(), pool, el, logOptions())
		if err != nil || !rep.Complete || rep.Skipped != 3 || rep.Recovered != 2 {
			t.Fatalf("%+v, %v; want complete, 2 stored, 3 passed over", rep, err)
		}
		if at2, lastErr := checkpointOf(t, pool, "gh"); !at2.Equal(rep.To) || lastErr != "" {
			t.Fatalf("checkpoint %s (%q), want %s", at2, lastErr, rep.To)
		}
	})
}

// TestEventLogClockAheadHidesNothing: a pass run while the local clock is
// two hours ahead does not set the checkpoint past the provider's own
// clock, so the events the provider creates afterwards are read by the
// next pass, once the clock is right again.
func TestEventLogClockAheadHidesNothing(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	f := stripefake.New("sk")
	defer f.Close()
	f.Add(stripeEvents(50, 5, time.Now().Add(-time.Hour))...)
	el := mustStripe(t, f, "sk")
	opts := logOptions()
	opts.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	rep, err := RunLog(context.Background(), pool, el, opts)
	if err != nil || !rep.Complete {
		t.Fatalf("pass with the clock ahead: %+v, %v", rep, err)
	}
	at, _ := checkpointOf(t, pool, "stripe")
	if limit := time.Now().Add(opts.withDefaults().Overlap + time.Second); at.After(limit) {
		t.Fatalf("checkpoint %s is later than the provider's clock plus the overlap (%s)", at, limit)
	}
	// The provider creates events after that pass (a minute later); the
	// next pass runs ten minutes later, with the clock right.
	later := make([]stripefake.Event, 30)
	for i := range later {
		later[i] = stripefake.Event{ID: fmt.Sprintf("evt_later_%02d", i), Type: "invoice.paid", Created: time.Now().Add(time.Minute + time.Duration(i)*time.Second)}
	}
	f.Add(later...)
	opts.now = func() time.Time { return time.Now().Add(10 * time.Minute) }
	if rep, err = RunLog(context.Background(), pool, el, opts); err != nil || !rep.Complete {
		t.Fatalf("pass with the clock right: %+v, %v", rep, err)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id LIKE 'evt_later_%'`); n != 30 {
		t.Fatalf("%d of the 30 events created after the pass with the clock ahead were read", n)
	}
	// A checkpoint already in the future (set before this rule) is brought
	// back by the next complete pass.
	dbExec(t, pool, `UPDATE webhooks.backfill_checkpoints SET read_until = now() + interval '3 hours'`)
	opts.now = time.Now
	if rep, err = RunLog(context.Background(), pool, el, opts); err != nil || !rep.Complete {
		t.Fatalf("pass over a checkpoint in the future: %+v, %v", rep, err)
	}
	if at, _ := checkpointOf(t, pool, "stripe"); at.After(time.Now().Add(opts.withDefaults().Overlap)) {
		t.Fatalf("a checkpoint in the future stays at %s", at)
	}
}

// TestEventLogCursorCycleEndsPass: list cursors that run A→B→A (Stripe's
// starting_after, GitHub's Link cursor) end the pass at once, logged and
// counted as malformed; the checkpoint does not move past what was read.
func TestEventLogCursorCycleEndsPass(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(-time.Hour)
	opts := logOptions()
	opts.PassTimeout = 5 * time.Second
	t.Run("stripe", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		srv, requests := stripeListServer(t, map[string][]string{
			"":      {stripeJSON("evt_top", "t.x", at, `{}`), stripeJSON("evt_A", "t.x", at, `{}`)},
			"evt_A": {stripeJSON("evt_x", "t.x", at, `{}`), stripeJSON("evt_B", "t.x", at, `{}`)},
			"evt_B": {stripeJSON("evt_y", "t.x", at, `{}`), stripeJSON("evt_A", "t.x", at, `{}`)},
		}, map[string]string{"": "evt_A", "evt_A": "evt_B", "evt_B": "evt_A"})
		el, _ := stripe.NewEventLog("stripe", srv.URL, "k")
		rep, err := RunLog(context.Background(), pool, el, opts)
		var malformed *MalformedError
		if !errors.As(err, &malformed) || !strings.Contains(err.Error(), "cycle") || rep.Complete || requests.Load() > 4 {
			t.Fatalf("cursor cycle: %+v, %v after %d requests; want the pass ended at the cycle", rep, err, requests.Load())
		}
		if got, lastErr := checkpointOf(t, pool, "stripe"); got.After(rep.From.Add(opts.withDefaults().Overlap)) || !strings.Contains(lastErr, "cycle") {
			t.Fatalf("checkpoint %s (%q) after a cycle", got, lastErr)
		}
	})
	t.Run("github", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		var requests atomic.Int64
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			next := map[string]string{"": "A", "A": "B", "B": "A"}[r.URL.Query().Get("cursor")]
			w.Header().Set("Link", fmt.Sprintf(`<%s/app/hook/deliveries?per_page=100&cursor=%s>; rel="next"`, srv.URL, next))
			fmt.Fprintf(w, `[{"id": 1, "guid": "g-%s", "delivered_at": %q, "event": "ping"}]`, next, at.UTC().Format(time.RFC3339))
		}))
		defer srv.Close()
		dbExec(t, pool, `SELECT webhooks.ingest_webhook('gh', g, 'ping', '{}') FROM unnest(ARRAY['g-A', 'g-B']) AS g`)
		_, pemText := githubfake.AppKey(t)
		el, err := github.NewEventLog("gh", srv.URL, "77", pemText)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := RunLog(context.Background(), pool, el, opts)
		if err == nil || !strings.Contains(err.Error(), "cycle") || rep.Complete || requests.Load() > 4 {
			t.Fatalf("cursor cycle: %+v, %v after %d requests; want the pass ended at the cycle", rep, err, requests.Load())
		}
	})
}

// TestEventLogBacklogLongerThanAPass: a first pass over a backlog the API
// serves too slowly for one pass (each page takes 100 ms, a pass ends after
// one second, twenty pages) makes progress pass after pass, while new
// events keep arriving at the top: after a few passes every event is
// stored and the checkpoint has moved.
func TestEventLogBacklogLongerThanAPass(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	f := stripefake.New("sk")
	defer f.Close()
	f.Add(stripeEvents(2000, 20, time.Now().Add(-time.Hour))...)
	f.Fail = func(int, *http.Request) (int, string) {
		time.Sleep(100 * time.Millisecond)
		return 0, ""
	}
	el := mustStripe(t, f, "sk")
	opts := logOptions()
	opts.PassTimeout = time.Second
	want, passes := 2000, 0
	var rep LogReport
	for passes = 1; passes <= 40; passes++ {
		var err error
		rep, err = RunLog(context.Background(), pool, el, opts)
		if rep.Complete {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		// New events keep arriving at the top of the list.
		f.Add(stripefake.Event{ID: fmt.Sprintf("evt_new_%02d", passes), Type: "invoice.paid", Created: time.Now().Add(-45 * time.Second)})
		want++
	}
	if !rep.Complete || passes == 1 {
		t.Fatalf("after %d passes: %+v; want several passes, the last complete (%d of %d stored)", passes, rep, dbInt(t, pool, `SELECT count(*) FROM webhooks.events`), want)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); int(n) != want {
		t.Fatalf("%d of %d events stored after %d passes", n, want, passes)
	}
	at, _ := checkpointOf(t, pool, "stripe")
	if !at.Equal(rep.To) || dbInt(t, pool, `SELECT count(*) FROM webhooks.backfill_checkpoints WHERE resume_cursor IS NULL`) != 1 {
		t.Fatalf("checkpoint %s, want %s and no resume point", at, rep.To)
	}
	t.Logf("%d passes", passes)
}

// TestGitHubLogBacklogLongerThanAPass: the same with GitHub's delivery log,
// whose Link cursors are offsets (new deliveries shift them) and whose
// missing deliveries each cost a detail request: after a few passes every
// guid is stored once and the checkpoint has moved.
func TestGitHubLogBacklogLongerThanAPass(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	key, pemText := githubfake.AppKey(t)
	f := githubfake.New("77", &key.PublicKey)
	defer f.Close()
	start := time.Now().Add(-2 * time.Hour)
	payload := json.RawMessage(`{"zen": "Design for failure."}`)
	for i := range 1500 {
		f.Add(githubfake.Delivery{ID: int64(i + 1), GUID: fmt.Sprintf("guid-%05d", i), DeliveredAt: start.Add(time.Duration(i) * time.Second),
			Event: "ping", StatusCode: 502, Payload: payload})
	}
	f.Fail = func(_ int, r *http.Request) (int, string) {
		if r.URL.Path == "/app/hook/deliveries" {
			time.Sleep(100 * time.Millisecond) // 15 list pages: more than one pass can even list
		}
		return 0, ""
	}
	el, err := github.NewEventLog("gh", f.URL, "77", pemText)
	if err != nil {
		t.Fatal(err)
	}
	opts := logOptions()
	opts.PassTimeout = time.Second
	want, passes := 1500, 0
	var rep LogReport
	for passes = 1; passes <= 60; passes++ {
		rep, _ = RunLog(context.Background(), pool, el, opts)
		if rep.Complete {
			break
		}
		f.Add(githubfake.Delivery{ID: int64(10000 + passes), GUID: fmt.Sprintf("guid-new-%02d", passes), DeliveredAt: time.Now().Add(-45 * time.Second),
			Event: "ping", StatusCode: 502, Payload: payload})
		want++
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); !rep.Complete || passes == 1 || int(n) != want {
		t.Fatalf("after %d passes: %+v; %d of %d deliveries stored; want several passes, the last complete, all stored", passes, rep, n, want)
	}
	t.Logf("%d passes", passes)
}
