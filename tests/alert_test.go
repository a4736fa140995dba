package tests

// Alerts (PGINBOX_ALERT_URL) against a real receiver: an httptest server
// that records every POST, with runners on a real database running their
// checks schedule.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/alert"
	"github.com/pginbox/pginbox/runner"
)

// alertSecret signs the alert POSTs in these tests.
const alertSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// alertPost is one POST the receiver got.
type alertPost struct {
	Header http.Header
	Body   []byte
	Code   int // what the receiver answered
	At     time.Time
	Alert  struct {
		Check       string   `json:"check"`
		Family      string   `json:"family"`
		Status      string   `json:"status"`
		Value       *float64 `json:"value"`
		MinOK       *float64 `json:"min_ok"`
		MaxOK       *float64 `json:"max_ok"`
		Description string   `json:"description"`
		Remedy      string   `json:"remedy"`
		At          string   `json:"at"`
	}
}

// alertReceiver records the POSTs it gets; answer (nil: 200) picks the
// status of the n-th POST (from 1) about a check.
type alertReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	posts  []alertPost
	answer func(check string, n int) int
	// delay holds each answer: a slow receiver widens the window in which
	// two runners could both send one alert.
	delay time.Duration
}

func newAlertReceiver(t *testing.T, answer func(check string, n int) int) *alertReceiver {
	t.Helper()
	r := &alertReceiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		p := alertPost{Header: req.Header.Clone(), Body: body, At: time.Now(), Code: 200}
		_ = json.Unmarshal(body, &p.Alert)
		r.mu.Lock()
		n := 1
		for _, q := range r.posts {
			if q.Alert.Check == p.Alert.Check {
				n++
			}
		}
		if r.answer != nil {
			p.Code = r.answer(p.Alert.Check, n)
		}
		r.posts = append(r.posts, p)
		delay := r.delay
		r.mu.Unlock()
		time.Sleep(delay)
		w.WriteHeader(p.Code)
	}))
	t.Cleanup(r.Close)
	return r
}

// got returns the POSTs about check with status, and those answered 2xx.
func (r *alertReceiver) got(check, status string) (all, delivered []alertPost) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.posts {
		if p.Alert.Check == check && p.Alert.Status == status {
			all = append(all, p)
			if p.Code/100 == 2 {
				delivered = append(delivered, p)
			}
		}
	}
	return all, delivered
}

// TestAlertsOnePostPerBreachWithTwoRunners: a dead event makes
// dead_events_24h breach; two runners checking every 300 ms send exactly one
// firing POST (within 30 s), however many runs see the breach, and exactly
// one resolved POST once it clears. Each POST is signed the Standard
// Webhooks way and carries the check, its range, description and remedy.
func TestAlertsOnePostPerBreachWithTwoRunners(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	rcv := newAlertReceiver(t, nil)
	rcv.mu.Lock()
	rcv.delay = time.Second
	rcv.mu.Unlock()
	cfg := runner.Config{ChecksEvery: 300 * time.Millisecond, ReconcileEvery: time.Hour, AlertURL: rcv.URL, AlertSecret: alertSecret}
	startServer(t, conf.URL(), cfg, sumeOnly)
	startServer(t, conf.URL(), cfg, sumeOnly)

	// Let the first runs judge the healthy state, then break it.
	waitFor(t, 20*time.Second, "a first run of the checks", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results WHERE name = 'dead_events_24h'`) >= 2
	})
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, last_error, attempts)
		VALUES ('sume', 'dead-1', 't', '{}', 'dead', 'boom', 1)`)
	broke := time.Now()
	waitFor(t, 30*time.Second, "the firing POST", func() bool {
		_, d := rcv.got("dead_events_24h", "firing")
		return len(d) >= 1
	})
	_, fired := rcv.got("dead_events_24h", "firing")
	t.Logf("firing POST %v after the breach", fired[0].At.Sub(broke).Round(time.Millisecond))

	// Many more runs of both runners see the same breach: no second POST.
	runs := queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results WHERE name = 'dead_events_24h' AND NOT ok`)
	waitFor(t, 30*time.Second, "ten more runs seeing the breach", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results WHERE name = 'dead_events_24h' AND NOT ok`) >= runs+10
	})
	time.Sleep(time.Second) // a POST of the last run would be under way
	if all, _ := rcv.got("dead_events_24h", "firing"); len(all) != 1 {
		t.Fatalf("%d firing POSTs for one breach, want 1", len(all))
	}

	p := fired[0]
	a := p.Alert
	if a.Family != "referential" || a.Value == nil || *a.Value != 1 || a.MaxOK == nil || *a.MaxOK != 0 ||
		a.Description == "" || !strings.Contains(a.Remedy, "replay") || a.At == "" {
		t.Fatalf("firing alert %s: want family, value 1, max_ok 0, description, remedy and at", p.Body)
	}
	if _, err := time.Parse(time.RFC3339, a.At); err != nil {
		t.Fatalf("at %q: %v", a.At, err)
	}
	key, err := alert.DecodeSecret(alertSecret)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := strconv.ParseInt(p.Header.Get("webhook-timestamp"), 10, 64)
	if want := alert.Sign(key, p.Header.Get("webhook-id"), time.Unix(ts, 0), p.Body); p.Header.Get("webhook-signature") != want ||
		!strings.HasPrefix(p.Header.Get("webhook-id"), "pginbox-alert-") {
		t.Fatalf("signature headers %v, want webhook-signature %s", p.Header, want)
	}

	// Clear it: one resolved POST.
	execSQL(t, pool, `DELETE FROM webhooks.events WHERE external_id = 'dead-1'`)
	waitFor(t, 30*time.Second, "the resolved POST", func() bool {
		_, d := rcv.got("dead_events_24h", "resolved")
		return len(d) >= 1
	})
	runs = queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results WHERE name = 'dead_events_24h' AND ok`)
	waitFor(t, 30*time.Second, "ten more runs seeing it clear", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.check_results WHERE name = 'dead_events_24h' AND ok`) >= runs+10
	})
	time.Sleep(time.Second)
	if all, _ := rcv.got("dead_events_24h", "resolved"); len(all) != 1 {
		t.Fatalf("%d resolved POSTs, want 1", len(all))
	}
	if all, _ := rcv.got("dead_events_24h", "firing"); len(all) != 1 {
		t.Fatalf("%d firing POSTs in all, want 1", len(all))
	}
}

// TestAlertsRetriedUntilDelivered: a receiver answering 503 (then timing out
// would be the same: no answer) gets the same alert again with backoff until
// it takes it; one delivery, same webhook-id each time.
func TestAlertsRetriedUntilDelivered(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	rcv := newAlertReceiver(t, func(check string, n int) int {
		if check == "dead_events_24h" && n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, last_error, attempts)
		VALUES ('sume', 'dead-1', 't', '{}', 'dead', 'boom', 1)`)
	srv := startServer(t, conf.URL(), runner.Config{ChecksEvery: 300 * time.Millisecond, ReconcileEvery: time.Hour,
		AlertURL: rcv.URL, AlertSecret: alertSecret}, sumeOnly)
	waitFor(t, 60*time.Second, "the firing POST to be taken", func() bool {
		_, d := rcv.got("dead_events_24h", "firing")
		return len(d) >= 1
	})
	all, delivered := rcv.got("dead_events_24h", "firing")
	if len(all) != 3 || len(delivered) != 1 {
		t.Fatalf("%d POSTs, %d taken; want 3 (two 503s) and 1", len(all), len(delivered))
	}
	if all[0].Header.Get("webhook-id") != all[2].Header.Get("webhook-id") {
		t.Fatalf("webhook-id changed between attempts: %q, %q", all[0].Header.Get("webhook-id"), all[2].Header.Get("webhook-id"))
	}
	if gap := all[2].At.Sub(all[1].At); gap < 500*time.Millisecond {
		t.Fatalf("second retry %v after the first: no backoff", gap)
	}
	// The receiver answers before the sender commits.
	waitFor(t, 10*time.Second, "the alert marked sent", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.alerts WHERE name = 'dead_events_24h' AND sent_at IS NOT NULL`) == 1
	})
	if n := queryInt(t, pool, `SELECT attempts FROM webhooks.alerts WHERE name = 'dead_events_24h' AND sent_at IS NOT NULL`); n != 3 {
		t.Fatalf("attempts = %d, want 3", n)
	}
	if n := metricValue(t, srv.Admin, "pginbox_alert_posts_total", `outcome="retry"`); n != 2 {
		t.Fatalf("pginbox_alert_posts_total{outcome=\"retry\"} = %d, want 2", n)
	}
}

// TestAlertsRefusedAreGivenUp: a receiver that refuses an alert with a 4xx
// other than 408/429 gets it once (sending it again cannot succeed): the
// row is given up with the status in last_error, and the check's next alert
// (resolved) is still sent.
func TestAlertsRefusedAreGivenUp(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	rcv := newAlertReceiver(t, func(check string, n int) int {
		if check == "dead_events_24h" && n == 1 {
			return http.StatusUnprocessableEntity
		}
		return http.StatusOK
	})
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, last_error, attempts)
		VALUES ('sume', 'dead-1', 't', '{}', 'dead', 'boom', 1)`)
	srv := startServer(t, conf.URL(), runner.Config{ChecksEvery: 300 * time.Millisecond, ReconcileEvery: time.Hour, AlertURL: rcv.URL}, sumeOnly)
	waitFor(t, 30*time.Second, "the firing alert given up", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.alerts
			WHERE name = 'dead_events_24h' AND status = 'firing' AND given_up_at IS NOT NULL AND sent_at IS NULL
			  AND attempts = 1 AND last_error LIKE '%422%'`) == 1
	})
	execSQL(t, pool, `DELETE FROM webhooks.events WHERE external_id = 'dead-1'`)
	waitFor(t, 30*time.Second, "the resolved POST after the refused firing", func() bool {
		_, d := rcv.got("dead_events_24h", "resolved")
		return len(d) == 1
	})
	if all, _ := rcv.got("dead_events_24h", "firing"); len(all) != 1 {
		t.Fatalf("the refused firing alert was POSTed %d times, want 1", len(all))
	}
	if n := metricValue(t, srv.Admin, "pginbox_alert_posts_total", `outcome="rejected"`); n != 1 {
		t.Fatalf("pginbox_alert_posts_total{outcome=\"rejected\"} = %d, want 1", n)
	}
}

// TestAlertsOldBacklogNotSent: to an alert URL in use for three days, an
// alert unsent a day after its transition is not sent (nor does it hold back its check's newer alert), and a new
// transition deletes rows older than 30 days, sent or not: the outbox stays
// bounded even where no runner sends it.
func TestAlertsOldBacklogNotSent(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	execSQL(t, pool, `INSERT INTO webhooks.alerts (name, family, status, at, created_at, next_attempt_at) VALUES
		('gaps_recent', 'gaps', 'firing', now() - interval '40 days', now() - interval '40 days', now() - interval '40 days'),
		('dead_events_24h', 'referential', 'firing', now() - interval '2 days', now() - interval '2 days', now() - interval '2 days'),
		('dead_events_24h', 'referential', 'resolved', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour')`)
	rcv := newAlertReceiver(t, nil)
	// The URL has been in use for three days (its receiver down since).
	execSQL(t, pool, `INSERT INTO webhooks.alert_receivers (url_sha256, first_used_at)
		VALUES (sha256(convert_to($1, 'UTF8')), now() - interval '3 days')`, rcv.URL)
	startServer(t, conf.URL(), runner.Config{ChecksEvery: 300 * time.Millisecond, ReconcileEvery: time.Hour, AlertURL: rcv.URL}, sumeOnly)
	waitFor(t, 30*time.Second, "the resolved alert of the last hour", func() bool {
		_, d := rcv.got("dead_events_24h", "resolved")
		return len(d) == 1
	})
	if all, _ := rcv.got("dead_events_24h", "firing"); len(all) != 0 {
		t.Fatalf("a firing alert two days old was sent %d times", len(all))
	}
	// A new transition (a breach) prunes the 40-day-old row.
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, last_error, attempts)
		VALUES ('sume', 'dead-1', 't', '{}', 'dead', 'boom', 1)`)
	waitFor(t, 30*time.Second, "the new firing alert", func() bool {
		_, d := rcv.got("dead_events_24h", "firing")
		return len(d) == 1
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.alerts WHERE created_at < now() - interval '30 days'`); n != 0 {
		t.Fatalf("%d alerts older than 30 days kept", n)
	}
	if all, _ := rcv.got("gaps_recent", "firing"); len(all) != 0 {
		t.Fatal("a 40-day-old alert was sent")
	}
}
