package alert

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func f(v float64) *float64 { return &v }

var at = time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)

func firing() Alert {
	return Alert{ID: 7, Check: "dead_events_24h", Family: "referential", Status: "firing", Value: f(3), MaxOK: f(0),
		Description: "events that used all their attempts", Remedy: "replay them", At: at}
}

// TestAlertFormats pins the body of each PGINBOX_ALERT_FORMAT for a firing
// and a resolved alert.
func TestAlertFormats(t *testing.T) {
	t.Parallel()
	resolved := firing()
	resolved.Status, resolved.Value, resolved.At, resolved.Since = "resolved", f(0), at.Add(time.Hour), at
	cases := []struct {
		format string
		a      Alert
		want   string
	}{
		{"pginbox", firing(), `{"check":"dead_events_24h","family":"referential","status":"firing","value":3,"min_ok":null,"max_ok":0,` +
			`"description":"events that used all their attempts","remedy":"replay them","at":"2026-12-02T03:04:05Z"}`},
		{"pginbox", resolved, `{"check":"dead_events_24h","family":"referential","status":"resolved","value":0,"min_ok":null,"max_ok":0,` +
			`"description":"events that used all their attempts","remedy":"replay them","at":"2026-12-02T04:04:05Z"}`},
		{"slack", firing(), `{"text":":rotating_light: *FIRING* pginbox check dead_events_24h (referential) breached: 3, range [-inf, 0]\n` +
			`events that used all their attempts\nWhat to do: replay them\nat 2026-12-02T03:04:05Z"}`},
		{"slack", resolved, `{"text":":white_check_mark: *RESOLVED* pginbox check dead_events_24h (referential) cleared: 0, range [-inf, 0]\n` +
			`events that used all their attempts\nat 2026-12-02T04:04:05Z"}`},
		{"pagerduty", firing(), `{"dedup_key":"pginbox/dead_events_24h","event_action":"trigger","payload":{"component":"dead_events_24h",` +
			`"custom_details":{"description":"events that used all their attempts","max_ok":0,"min_ok":null,"remedy":"replay them","value":3},` +
			`"group":"referential","severity":"error","source":"pginbox",` +
			`"summary":"pginbox check dead_events_24h (referential) breached: 3, range [-inf, 0]","timestamp":"2026-12-02T03:04:05Z"},"routing_key":"rk"}`},
		{"pagerduty", resolved, `{"dedup_key":"pginbox/dead_events_24h","event_action":"resolve","routing_key":"rk"}`},
		{"alertmanager", firing(), `[{"annotations":{"description":"events that used all their attempts","remedy":"replay them",` +
			`"summary":"pginbox check dead_events_24h (referential) breached: 3, range [-inf, 0]"},"endsAt":"2027-12-02T03:04:05Z",` +
			`"labels":{"alertname":"PginboxCheckBreached","check":"dead_events_24h","family":"referential","service":"pginbox","severity":"warning"},` +
			`"startsAt":"2026-12-02T03:04:05Z"}]`},
		{"alertmanager", resolved, `[{"annotations":{"description":"events that used all their attempts","remedy":"replay them",` +
			`"summary":"pginbox check dead_events_24h (referential) cleared: 0, range [-inf, 0]"},"endsAt":"2026-12-02T04:04:05Z",` +
			`"labels":{"alertname":"PginboxCheckBreached","check":"dead_events_24h","family":"referential","service":"pginbox","severity":"warning"},` +
			`"startsAt":"2026-12-02T03:04:05Z"}]`},
	}
	for _, tc := range cases {
		t.Run(tc.format+"/"+tc.a.Status, func(t *testing.T) {
			t.Parallel()
			body, err := formats[tc.format](tc.a, Config{RoutingKey: "rk"})
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tc.want {
				t.Fatalf("body\n%s\nwant\n%s", body, tc.want)
			}
			if !json.Valid(body) {
				t.Fatal("not JSON")
			}
		})
	}
}

// newTestSender is a Sender without a database, for post().
func newTestSender(t *testing.T, url string) *Sender {
	t.Helper()
	s, err := New(nil, Config{URL: url, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Timeout: 2 * time.Second},
		nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPostOutcomes: what each answer of the receiver makes of a POST: 2xx
// delivered; no answer, 5xx, 408 and 429 retried (Retry-After read); any
// other status, a redirect included, given up — and a redirect is never
// followed. Errors name the URL's origin only.
func TestPostOutcomes(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	cases := []struct {
		name       string
		code       int
		header     map[string]string
		want       outcome
		retryAfter time.Duration
	}{
		{"200", 200, nil, delivered, 0},
		{"202", 202, nil, delivered, 0},
		{"500", 500, nil, retry, 0},
		{"503 with Retry-After", 503, map[string]string{"Retry-After": "42"}, retry, 42 * time.Second},
		{"408", 408, nil, retry, 0},
		{"429", 429, map[string]string{"Retry-After": "7"}, retry, 7 * time.Second},
		{"400", 400, nil, rejected, 0},
		{"401", 401, nil, rejected, 0},
		{"404", 404, nil, rejected, 0},
		{"410", 410, nil, rejected, 0},
		{"302 to another origin", 302, map[string]string{"Location": other.URL + "/steal"}, rejected, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.code)
			}))
			defer rcv.Close()
			s := newTestSender(t, rcv.URL+"/hooks/T000/B000/secretpath?token=x")
			res := s.post(context.Background(), firing())
			if res.outcome != tc.want || res.retryAfter != tc.retryAfter {
				t.Fatalf("outcome %v retry-after %v (%v), want %v %v", res.outcome, res.retryAfter, res.err, tc.want, tc.retryAfter)
			}
			if res.err != nil && (strings.Contains(res.err.Error(), "secretpath") || strings.Contains(res.err.Error(), "token")) {
				t.Fatalf("error shows more than the origin: %v", res.err)
			}
		})
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect was followed %d times", n)
	}
}

// TestPostNoAnswer: a receiver that does not answer within the timeout, or
// a port nobody listens on, is retried; the error shows the origin only.
func TestPostNoAnswer(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer hang.Close()
	defer close(done) // before Close, which waits for the handler
	s := newTestSender(t, hang.URL+"/secretpath")
	s.cfg.Timeout = 200 * time.Millisecond
	res := s.post(context.Background(), firing())
	if res.outcome != retry || res.err == nil || strings.Contains(res.err.Error(), "secretpath") {
		t.Fatalf("hanging receiver: %v %v", res.outcome, res.err)
	}
	s = newTestSender(t, "http://127.0.0.1:9/secretpath")
	res = s.post(context.Background(), firing())
	if res.outcome != retry || res.err == nil || strings.Contains(res.err.Error(), "secretpath") {
		t.Fatalf("closed port: %v %v", res.outcome, res.err)
	}
}

// TestNewRefusesBadSettings: a bad secret, URL or format stops New with an
// error that names what is wrong and never repeats the secret.
func TestNewRefusesBadSettings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no whsec_ prefix", Config{URL: "https://x.example", Secret: "c2VjcmV0LXZhbHVlLTEyMzQ1Njc4"}, `does not start with "whsec_"`},
		{"not base64", Config{URL: "https://x.example", Secret: "whsec_not*base64*secretvalue"}, "is not base64"},
		{"too short", Config{URL: "https://x.example", Secret: "whsec_c2hvcnQ="}, "fewer than 16"},
		{"not a URL", Config{URL: "ftp://x.example/secretpath"}, "PGINBOX_ALERT_URL: is not an absolute http or https URL"},
		{"unknown format", Config{URL: "https://x.example", Format: "teams"}, `alert format "teams" is not one of`},
		{"pagerduty without key", Config{URL: "https://x.example", Format: "pagerduty"}, "routing key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(nil, tc.cfg, nil, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			for _, secret := range []string{tc.cfg.Secret, "secretpath", "not*base64", "c2hvcnQ"} {
				if secret != "" && strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q repeats %q", err, secret)
				}
			}
		})
	}
}

// TestBackoff: 1 s doubling with jitter, capped; Retry-After honoured up to
// the cap.
func TestBackoff(t *testing.T) {
	t.Parallel()
	s := &Sender{cfg: Config{MaxBackoff: 5 * time.Minute}}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second} {
		if d := s.backoff(n, 0); d < want/2 || d > want {
			t.Errorf("attempt %d: %v, want within [%v, %v]", n, d, want/2, want)
		}
	}
	if d := s.backoff(30, 0); d != 5*time.Minute {
		t.Errorf("attempt 30: %v, want the 5m cap", d)
	}
	if d := s.backoff(1, 42*time.Second); d != 42*time.Second {
		t.Errorf("Retry-After 42s: %v", d)
	}
	if d := s.backoff(1, time.Hour); d != 5*time.Minute {
		t.Errorf("Retry-After 1h: %v, want the cap", d)
	}
}
