package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/provider/github"
	"github.com/pginbox/pginbox/internal/provider/github/githubfake"
	"github.com/pginbox/pginbox/internal/provider/stripe"
	"github.com/pginbox/pginbox/internal/provider/stripe/stripefake"
)

// stripeEvents returns n events ending an hour ago, per events sharing each
// created second (so ties straddle page boundaries).
func stripeEvents(n, per int, end time.Time) []stripefake.Event {
	evs := make([]stripefake.Event, n)
	for i := range evs {
		evs[i] = stripefake.Event{ID: fmt.Sprintf("evt_%05d", i), Type: []string{"charge.succeeded", "invoice.paid", "customer.created"}[i%3],
			Created: end.Add(-time.Duration((n-i)/per) * time.Second)}
	}
	return evs
}

func logOptions() Options {
	o := fastOptions(nil)
	o.Lookback = 3 * time.Hour
	return o
}

func mustStripe(t *testing.T, f *stripefake.Server, key string) *stripe.EventLog {
	t.Helper()
	l, err := stripe.NewEventLog("stripe", f.URL, key)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// storeWebhook ingests e as its webhook would have.
func storeWebhook(t *testing.T, pool *pgxpool.Pool, e stripefake.Event) {
	t.Helper()
	dbExec(t, pool, `SELECT webhooks.ingest_webhook('stripe', $1, $2, $3::jsonb)`, e.ID, e.Type, string(e.JSON()))
}

func checkpointOf(t *testing.T, pool *pgxpool.Pool, provider string) (time.Time, string) {
	t.Helper()
	var at time.Time
	var lastErr *string
	if err := pool.QueryRow(context.Background(), `SELECT read_until, last_error FROM webhooks.backfill_checkpoints WHERE provider = $1`,
		provider).Scan(&at, &lastErr); err != nil {
		t.Fatalf("checkpoint of %s: %v", provider, err)
	}
	if lastErr == nil {
		return at, ""
	}
	return at, *lastErr
}

// TestStripeLogRecoversEverything: 1,050 events over 11 pages, 50 per
// created second so ties straddle every page boundary; a tenth arrived as
// webhooks. One pass stores every other one exactly once with source
// 'backfill', its id, type and event object; the checkpoint moves to the end;
// the next pass reads only the overlap.
func TestStripeLogRecoversEverything(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	f := stripefake.New("rk_test_events_read")
	defer f.Close()
	evs := stripeEvents(1050, 50, time.Now().Add(-time.Hour))
	f.Add(evs...)
	for i := 0; i < len(evs); i += 10 {
		storeWebhook(t, pool, evs[i])
	}
	el := mustStripe(t, f, "rk_test_events_read")
	rep, err := RunLog(context.Background(), pool, el, logOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Complete || rep.Pages != 11 || rep.Listed != 1050 || rep.Recovered != 945 || rep.Duplicates != 105 || rep.Requests != 11 {
		t.Fatalf("report %+v", rep)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'stripe'`); n != 1050 {
		t.Fatalf("%d events stored, want 1050", n)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'stripe' AND source = 'backfill'
		AND event_type = payload->>'type' AND external_id = payload->>'id' AND payload->>'object' = 'event'`); n != 945 {
		t.Fatalf("%d backfilled events carry their id, type and event object, want 945", n)
	}
	at, lastErr := checkpointOf(t, pool, "stripe")
	if !at.Equal(rep.To) || lastErr != "" || time.Since(at) > 2*time.Minute {
		t.Fatalf("checkpoint %s (%q), want %s", at, lastErr, rep.To)
	}
	// The anomaly checks see the recoveries: backfill_ratio counts them (945
	// of 1050 events), backfills_without_expectation leaves them out, and
	// the checkpoint is fresh.
	dbExec(t, pool, `SELECT webhooks.refresh_views()`)
	var ratio, unexpected, age float64
	if err := pool.QueryRow(context.Background(), `SELECT
			max(value) FILTER (WHERE name = 'backfill_ratio'),
			max(value) FILTER (WHERE name = 'backfills_without_expectation'),
			max(value) FILTER (WHERE name = 'backfill_checkpoint_age_seconds')
		FROM webhooks.run_checks()`).Scan(&ratio, &unexpected, &age); err != nil {
		t.Fatal(err)
	}
	if ratio < 0.8 || unexpected != 0 || age > 120 {
		t.Fatalf("checks: backfill_ratio %v, backfills_without_expectation %v, backfill_checkpoint_age_seconds %v", ratio, unexpected, age)
	}
	for _, q := range f.Queries() {
		v, _ := url.ParseQuery(q)
		if v.Get("limit") != "100" {
			t.Fatalf("query %q does not ask for 100 per page", q)
		}
	}

	before := f.Requests()
	rep2, err := RunLog(context.Background(), pool, el, logOptions())
	if err != nil {
		t.Fatal(err)
	}
	last, _ := url.ParseQuery(f.Queries()[len(f.Queries())-1])
	if f.Requests()-before != 1 || rep2.Listed != 0 || last.Get("created[gte]") != fmt.Sprint(at.Add(-2*time.Minute).Unix()) {
		t.Fatalf("steady-state pass: %d requests, %+v, query %v; want one page from the checkpoint minus the overlap", f.Requests()-before, rep2, last)
	}
}

// TestStripeLogFailures: 503s and a 429 with Retry-After in the middle of
// the pagination are retried and the pass completes; a 503 that persists
// ends the pass with the checkpoint where it was; a wrong key (401) ingests
// nothing and is an *AuthError.
func TestStripeLogFailures(t *testing.T) {
	t.Parallel()
	t.Run("retried", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		f := stripefake.New("sk_test_x")
		defer f.Close()
		f.Add(stripeEvents(350, 7, time.Now().Add(-time.Hour))...)
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
		rep, err := RunLog(context.Background(), pool, mustStripe(t, f, "sk_test_x"), opts)
		if err != nil || !rep.Complete || rep.Recovered != 350 || rep.Requests != 7 {
			t.Fatalf("report %+v, %v; want 350 recovered in 4 pages + 3 retries", rep, err)
		}
	})
	t.Run("persistent 503 leaves the checkpoint", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		f := stripefake.New("sk_test_x")
		defer f.Close()
		f.Add(stripeEvents(350, 7, time.Now().Add(-time.Hour))...)
		el := mustStripe(t, f, "sk_test_x")
		rep, err := RunLog(context.Background(), pool, el, logOptions())
		if err != nil {
			t.Fatal(err)
		}
		at, _ := checkpointOf(t, pool, "stripe")
		more := make([]stripefake.Event, 300)
		for i := range more {
			more[i] = stripefake.Event{ID: fmt.Sprintf("evt_more_%04d", i), Type: "invoice.paid", Created: at.Add(-time.Duration(i%50) * time.Second)}
		}
		f.Add(more...)
		base := f.Requests()
		f.Fail = func(n int, _ *http.Request) (int, string) {
			if n > base+1 { // the second page and every retry of it
				return http.StatusBadGateway, ""
			}
			return 0, ""
		}
		rep, err = RunLog(context.Background(), pool, el, logOptions())
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || rep.Complete {
			t.Fatalf("persistent 502: %+v, %v", rep, err)
		}
		at2, lastErr := checkpointOf(t, pool, "stripe")
		if !at2.Equal(at) || !strings.Contains(lastErr, "HTTP 502") {
			t.Fatalf("checkpoint %s (%q) after a pass cut short, want %s kept", at2, lastErr, at)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t, 4)
		f := stripefake.New("sk_test_right")
		defer f.Close()
		f.Add(stripeEvents(10, 1, time.Now().Add(-time.Hour))...)
		rep, err := RunLog(context.Background(), pool, mustStripe(t, f, "sk_test_wrong"), logOptions())
		var auth *AuthError
		if !errors.As(err, &auth) || !errors.Is(err, ErrUnauthorized) || rep.Complete || rep.Requests != 1 {
			t.Fatalf("wrong key: %+v, %v; want an *AuthError after one request", rep, err)
		}
		if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 0 {
			t.Fatalf("%d events ingested with a refused key", n)
		}
	})
}

// TestStripeLogMalformedPage: a page whose envelope cannot be read (no
// "has_more": no way to know whether, or where, the list goes on) is not
// applied at all (the pages before it are), counted, and the checkpoint
// stays. (One unusable event on a readable page is passed over instead:
// TestEventLogPassesOverUnstorableEntries.)
func TestStripeLogMalformedPage(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	created := time.Now().Add(-time.Hour).Unix()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("starting_after") == "" {
			fmt.Fprintf(w, `{"object": "list", "has_more": true, "data": [{"id": "evt_a", "type": "t", "created": %d}]}`, created)
			return
		}
		fmt.Fprintf(w, `{"object": "list", "data": [{"id": "evt_b", "type": "t", "created": %d}, {"id": "evt_c", "type": "t", "created": %d}]}`, created, created)
	}))
	defer srv.Close()
	el, _ := stripe.NewEventLog("stripe", srv.URL, "k")
	rep, err := RunLog(context.Background(), pool, el, logOptions())
	var malformed *MalformedError
	if !errors.As(err, &malformed) || rep.Malformed != 1 || rep.Complete || rep.Recovered != 1 {
		t.Fatalf("malformed page: %+v, %v", rep, err)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id IN ('evt_b', 'evt_c')`); n != 0 {
		t.Fatal("the malformed page was half-applied")
	}
	if _, lastErr := checkpointOf(t, pool, "stripe"); !strings.Contains(lastErr, "malformed") {
		t.Fatalf("last_error %q", lastErr)
	}
}

// TestStripeLogRacesWebhooks: webhooks of the same events land while the
// pass runs, on many connections: one row per event, whichever came first.
func TestStripeLogRacesWebhooks(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 12)
	f := stripefake.New("sk")
	defer f.Close()
	evs := stripeEvents(600, 3, time.Now().Add(-time.Hour))
	f.Add(evs...)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(evs); i += 8 {
				e := evs[len(evs)-1-i] // newest first, as the pass reads
				if _, err := pool.Exec(context.Background(), `SELECT webhooks.ingest_webhook('stripe', $1, $2, $3::jsonb)`,
					e.ID, e.Type, string(e.JSON())); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	rep, err := RunLog(context.Background(), pool, mustStripe(t, f, "sk"), logOptions())
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 600 {
		t.Fatalf("%d rows for 600 events", n)
	}
	if b := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE source = 'backfill'`); int(b) != rep.Recovered || rep.Recovered+rep.Duplicates != 600 {
		t.Fatalf("%d backfilled rows, report %+v", b, rep)
	}
	t.Logf("webhooks won %d, backfill %d", rep.Duplicates, rep.Recovered)
}

// TestEventLogRestartResumes: a pass cut short by a shutdown in the middle
// of the pagination leaves the checkpoint; the next pass (a restarted
// runner) reads from that checkpoint minus the overlap, not the lookback, and
// recovers every event exactly once.
func TestEventLogRestartResumes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	f := stripefake.New("sk")
	defer f.Close()
	f.Add(stripeEvents(100, 10, time.Now().Add(-2*time.Hour))...)
	el := mustStripe(t, f, "sk")
	if _, err := RunLog(context.Background(), pool, el, logOptions()); err != nil {
		t.Fatal(err)
	}
	at, _ := checkpointOf(t, pool, "stripe")
	// New events after the checkpoint, some missed.
	fresh := make([]stripefake.Event, 450)
	for i := range fresh {
		fresh[i] = stripefake.Event{ID: fmt.Sprintf("evt_new_%04d", i), Type: "invoice.paid", Created: at.Add(time.Duration(i%20+1) * time.Second)}
	}
	f.Add(fresh...)
	ctx, shutdown := context.WithCancel(context.Background())
	base := f.Requests()
	f.Fail = func(n int, _ *http.Request) (int, string) {
		if n == base+3 {
			shutdown() // the runner stops during the third page
		}
		return 0, ""
	}
	opts := logOptions()
	opts.Lag = time.Second
	// The fresh events lie after now minus the lag only if the checkpoint is
	// older than 20s; make the clock comfortably later.
	time.Sleep(0)
	rep, err := RunLog(ctx, pool, el, opts)
	if err == nil || rep.Complete {
		t.Fatalf("the interrupted pass: %+v, %v", rep, err)
	}
	if at2, _ := checkpointOf(t, pool, "stripe"); !at2.Equal(at) {
		t.Fatalf("checkpoint moved to %s by an interrupted pass", at2)
	}
	f.Fail = nil
	n0 := len(f.Queries())
	rep, err = RunLog(context.Background(), pool, el, opts)
	if err != nil || !rep.Complete {
		t.Fatalf("the resumed pass: %+v, %v", rep, err)
	}
	first, _ := url.ParseQuery(f.Queries()[n0])
	if first.Get("created[gte]") != fmt.Sprint(at.Add(-2*time.Minute).Unix()) {
		t.Fatalf("resumed from created[gte]=%s, want the checkpoint minus the overlap (%d)", first.Get("created[gte]"), at.Add(-2*time.Minute).Unix())
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id LIKE 'evt_new_%'`); n != 450 {
		t.Fatalf("%d of 450 new events stored", n)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 550 {
		t.Fatalf("%d events, want 550 (each exactly once)", n)
	}
}

// TestGitHubLog: a delivery log of over 300 attempts for 220 guids (failed
// deliveries redelivered, several attempts per guid) over four Link pages;
// 40 guids already stored. Every missing guid is stored once with the
// event type a webhook would get and request.payload; the detail is fetched
// once per missing guid and never for a stored one; the fake verifies every
// JWT with the app's public key; the key may be given as a path.
func TestGitHubLog(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	key, pemText := githubfake.AppKey(t)
	f := githubfake.New("123456", &key.PublicKey)
	defer f.Close()
	now := time.Now()
	var ds []githubfake.Delivery
	id := int64(1000)
	for g := range 220 {
		guid := fmt.Sprintf("0b0c%04d-cc78-11e3-81ab-4c9367dc0958", g)
		at := now.Add(-time.Hour + time.Duration(g)*5*time.Second)
		attempts := 1 + g%3/2 // a third of the guids: a failed attempt, then a redelivery
		if g < 80 && g%4 == 0 {
			attempts = 2
		}
		for a := range attempts {
			id++
			status := 200
			if a < attempts-1 {
				status = 502
			}
			payload, _ := json.Marshal(map[string]any{"action": "opened", "issue": map[string]any{"number": g}})
			ds = append(ds, githubfake.Delivery{ID: id, GUID: guid, DeliveredAt: at.Add(time.Duration(a) * time.Second),
				Event: "issues", Action: "opened", StatusCode: status, Redelivery: a > 0, Payload: payload})
		}
	}
	for len(ds) < 300 {
		id++
		g := len(ds)
		payload, _ := json.Marshal(map[string]any{"zen": "Keep it logically awesome.", "hook_id": g})
		ds = append(ds, githubfake.Delivery{ID: id, GUID: fmt.Sprintf("ping-%04d", g), DeliveredAt: now.Add(-50 * time.Minute),
			Event: "ping", StatusCode: 502, Payload: payload})
	}
	f.Add(ds...)
	guids := map[string]bool{}
	for _, d := range ds {
		guids[d.GUID] = true
	}
	stored := map[string]bool{}
	for _, d := range ds {
		if len(stored) < 40 && !stored[d.GUID] && strings.HasPrefix(d.GUID, "0b0c") {
			stored[d.GUID] = true
			dbExec(t, pool, `SELECT webhooks.ingest_webhook('gh', $1, 'issues.opened', $2::jsonb)`, d.GUID, string(d.Payload))
		}
	}
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(keyFile, []byte(pemText), 0o600); err != nil {
		t.Fatal(err)
	}
	el, err := github.NewEventLog("gh", f.URL, "123456", keyFile)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunLog(context.Background(), pool, el, logOptions())
	if err != nil {
		t.Fatal(err)
	}
	missing := len(guids) - len(stored)
	pages := (len(ds) + 99) / 100
	if !rep.Complete || pages < 3 || rep.Pages != pages || rep.Listed != len(guids) || rep.Recovered != missing || rep.Fetched != missing {
		t.Fatalf("report %+v; want %d pages (%d attempts), %d guids listed, %d recovered and fetched", rep, pages, len(ds), len(guids), missing)
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'gh'`); int(n) != len(guids) {
		t.Fatalf("%d events for %d guids", n, len(guids))
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'gh' AND source = 'backfill'
		AND ((event_type = 'issues.opened' AND payload->>'action' = 'opened') OR (event_type = 'ping' AND payload ? 'zen'))`); int(n) != missing {
		t.Fatalf("%d backfilled deliveries with the webhook's type and payload, want %d", n, missing)
	}
	perGUID := map[string]int{}
	for _, d := range ds {
		perGUID[d.GUID] += f.Details(d.ID)
	}
	for g, n := range perGUID {
		if stored[g] && n != 0 || !stored[g] && n != 1 {
			t.Errorf("guid %s (stored %v): %d detail requests", g, stored[g], n)
		}
	}
	if f.Tokens() < 1 {
		t.Fatal("no JWT accepted")
	}

	// A wrong app key is refused by the fake: nothing more is ingested.
	other, otherPEM := githubfake.AppKey(t)
	_ = other
	bad, _ := github.NewEventLog("gh", f.URL, "123456", otherPEM)
	if _, err := RunLog(context.Background(), pool, bad, logOptions()); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("a JWT signed with another key: %v, want unauthorized", err)
	}
}

// TestEventLogKnowsKeysOfDroppedDays: a pass looks the listed keys up in
// webhooks.keys, which keeps a key after prune() dropped its event's day of
// history: of 30 GitHub deliveries, 10 stored long ago whose events are
// gone (their keys kept) are duplicates, neither fetched nor stored again;
// the other 20 are fetched and stored.
func TestEventLogKnowsKeysOfDroppedDays(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 4)
	key, pemText := githubfake.AppKey(t)
	f := githubfake.New("123456", &key.PublicKey)
	defer f.Close()
	now := time.Now()
	var ds []githubfake.Delivery
	for g := range 30 {
		payload, _ := json.Marshal(map[string]any{"action": "opened", "issue": map[string]any{"number": g}})
		ds = append(ds, githubfake.Delivery{ID: int64(5000 + g), GUID: fmt.Sprintf("9a1c%04d-cc78-11e3-81ab-4c9367dc0958", g),
			DeliveredAt: now.Add(-time.Hour + time.Duration(g)*time.Minute), Event: "issues", Action: "opened", StatusCode: 200, Payload: payload})
	}
	f.Add(ds...)
	for _, d := range ds[:10] {
		dbExec(t, pool, `SELECT webhooks.ingest_webhook('gh', $1, 'issues.opened', $2::jsonb)`, d.GUID, string(d.Payload))
	}
	// Their day dropped: the events gone, the keys kept.
	dbExec(t, pool, `DELETE FROM webhooks.inbox WHERE provider = 'gh'`)
	el, err := github.NewEventLog("gh", f.URL, "123456", pemText)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunLog(context.Background(), pool, el, logOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Complete || rep.Listed != 30 || rep.Duplicates != 10 || rep.Fetched != 20 || rep.Recovered != 20 {
		t.Fatalf("report %+v; want 30 listed, 10 duplicates, 20 fetched and recovered", rep)
	}
	for i, d := range ds {
		if n := f.Details(d.ID); (i < 10) != (n == 0) {
			t.Errorf("delivery %d (key kept: %v): %d detail requests", i, i < 10, n)
		}
	}
	if n := dbInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'gh'`); n != 20 {
		t.Fatalf("%d events, want the 20 recovered", n)
	}
}
