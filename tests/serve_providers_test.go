package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner"
)

// TestServeSlackLinearSquare: over real HTTP, what kinds slack, linear and
// square do beyond a plain valid or forged delivery (TestServeVerification
// covers those): Slack's signed url_verification is answered with its
// challenge and stores nothing, an unsigned one is 401, a retry
// (X-Slack-Retry-Num) is a duplicate; Linear's webhookTimestamp is checked,
// its unsigned Linear-Delivery key is required and a captured body under a
// fresh delivery id is a duplicate; Square's signature covers the configured
// notification URL, not the one pginbox is reached at behind a proxy.
func TestServeSlackLinearSquare(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	const slackSecret, linearSecret, squareKey = "slack-signing-e2e-0123", "lin_wh_e2e_secret_0123", "sq-signature-key-e2e-0123"
	srv := startServer(t, conf.URL(), runner.Config{}, map[string][2]string{
		"slack": {"slack", "slack-signing-older-0123," + slackSecret},
		"lin":   {"linear", linearSecret},
		"sq":    {"square", squareKey},
	})
	client := &http.Client{Timeout: 10 * time.Second}
	rows := func(provider string) int64 {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1`, provider)
	}

	t.Run("slack", func(t *testing.T) {
		url := srv.Base + "/webhooks/slack"
		const challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
		handshake := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"` + challenge + `","type":"url_verification"}`
		status, out := post(t, client, url, testsign.Slack(slackSecret, handshake, time.Now()), []byte(handshake))
		if status != 200 || out["challenge"] != challenge || len(out) != 1 {
			t.Fatalf("signed url_verification: %d %v, want 200 {\"challenge\": %q}", status, out, challenge)
		}
		if status, out := post(t, client, url, http.Header{}, []byte(handshake)); status != 401 || out["error"] != "signature missing" {
			t.Errorf("unsigned url_verification: %d %v, want 401 signature missing", status, out)
		}
		if status, out := post(t, client, url, testsign.Slack("not-the-signing-secret", handshake, time.Now()), []byte(handshake)); status != 401 || out["error"] != "signature mismatch" {
			t.Errorf("url_verification signed with another secret: %d %v, want 401 signature mismatch", status, out)
		}
		if n := rows("slack"); n != 0 {
			t.Fatalf("url_verification stored %d events", n)
		}

		event := `{"type":"event_callback","team_id":"T1","event_id":"Ev0PV52K25","event":{"type":"app_mention","text":"hi"}}`
		status, first := post(t, client, url, testsign.Slack(slackSecret, event, time.Now()), []byte(event))
		if status != 200 || first["outcome"] != "created" {
			t.Fatalf("event: %d %v", status, first)
		}
		// Slack re-signs a retry with a new timestamp and says which attempt it is.
		h := testsign.Slack(slackSecret, event, time.Now().Add(3*time.Second))
		h.Set("X-Slack-Retry-Num", "1")
		h.Set("X-Slack-Retry-Reason", "http_timeout")
		if status, res := post(t, client, url, h, []byte(event)); status != 200 || res["outcome"] != "duplicate" || res["event_id"] != first["event_id"] {
			t.Errorf("retry: %d %v, want 200 duplicate of %v", status, res, first["event_id"])
		}
		if status, out := post(t, client, url, testsign.Slack(slackSecret, event, time.Now().Add(-6*time.Minute)), []byte(event)); status != 401 || out["error"] != "timestamp out of tolerance" {
			t.Errorf("stale: %d %v", status, out)
		}
		noID := `{"type":"app_rate_limited","team_id":"T1","minute_rate_limited":1518467820}`
		if status, out := post(t, client, url, testsign.Slack(slackSecret, noID, time.Now()), []byte(noID)); status != 400 || out["error"] != "idempotency key missing" {
			t.Errorf("no event_id: %d %v, want 400 idempotency key missing", status, out)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'slack' AND external_id = 'Ev0PV52K25' AND event_type = 'app_mention'`); n != 1 || rows("slack") != 1 {
			t.Errorf("slack rows: %d of the event, %d in all; want 1 and 1", n, rows("slack"))
		}
	})

	t.Run("linear", func(t *testing.T) {
		url := srv.Base + "/webhooks/lin"
		body := func(title string, at time.Time) string {
			return fmt.Sprintf(`{"action":"create","type":"Issue","data":{"title":%q},"webhookTimestamp":%d}`, title, at.UnixMilli())
		}
		now := time.Now()
		b := body("first", now)
		status, first := post(t, client, url, testsign.Linear(linearSecret, "d-1", b), []byte(b))
		if status != 200 || first["outcome"] != "created" {
			t.Fatalf("issue: %d %v", status, first)
		}
		if status, res := post(t, client, url, testsign.Linear(linearSecret, "d-2", b), []byte(b)); status != 200 || res["outcome"] != "duplicate" || res["event_id"] != first["event_id"] {
			t.Errorf("captured body under a fresh Linear-Delivery: %d %v, want 200 duplicate of %v", status, res, first["event_id"])
		}
		for name, at := range map[string]time.Time{"stale": now.Add(-6 * time.Minute), "future": now.Add(6 * time.Minute)} {
			b := body(name, at)
			if status, out := post(t, client, url, testsign.Linear(linearSecret, "d-"+name, b), []byte(b)); status != 401 || out["error"] != "timestamp out of tolerance" {
				t.Errorf("%s webhookTimestamp: %d %v, want 401 timestamp out of tolerance", name, status, out)
			}
		}
		b = body("no delivery id", now)
		h := testsign.Linear(linearSecret, "", b)
		h.Del("Linear-Delivery")
		if status, out := post(t, client, url, h, []byte(b)); status != 400 || out["error"] != "idempotency key missing" {
			t.Errorf("no Linear-Delivery: %d %v, want 400 idempotency key missing", status, out)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'lin' AND external_id = 'd-1' AND event_type = 'Issue.create'`); n != 1 || rows("lin") != 1 {
			t.Errorf("linear rows: %d of the event, %d in all; want 1 and 1", n, rows("lin"))
		}
	})

	t.Run("square", func(t *testing.T) {
		url := srv.Base + "/webhooks/sq"
		body := `{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated","event_id":"13b867cf-db3d-4b1c-90b6-2f32a9d78124","data":{"type":"payment"}}`
		// Signed for the address pginbox is reached at, not the registered
		// notification URL (a proxy rewrote scheme, host and path): refused.
		if status, out := post(t, client, url, testsign.Square(squareKey, url, body), []byte(body)); status != 401 || out["error"] != "signature mismatch" {
			t.Errorf("signed for the URL pginbox sees: %d %v, want 401 signature mismatch", status, out)
		}
		status, out := post(t, client, url, testsign.Square(squareKey, squareURL, body), []byte(body))
		if status != 200 || out["outcome"] != "created" {
			t.Fatalf("signed for the registered URL: %d %v", status, out)
		}
		noID := strings.Replace(body, `"event_id"`, `"id"`, 1)
		if status, out := post(t, client, url, testsign.Square(squareKey, squareURL, noID), []byte(noID)); status != 400 || out["error"] != "idempotency key missing" {
			t.Errorf("no event_id: %d %v, want 400 idempotency key missing", status, out)
		}
		if n := rows("sq"); n != 1 {
			t.Errorf("square rows %d, want 1", n)
		}
	})
}

// TestIngestSignedSlackHandshakeAndSquareURL: in SQL, a signed Slack
// url_verification returns (NULL, 'challenge') and writes nothing, an
// unsigned one raises 28000; set_provider requires square's notification URL
// (and refuses one for kinds that sign none), and ingest_signed verifies
// square against the stored URL.
func TestIngestSignedSlackHandshakeAndSquareURL(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	const secret = "handshake-secret-0123456789"
	execSQL(t, pool, `SELECT webhooks.set_provider('sl', 'slack', ARRAY[$1])`, secret)
	handshake := `{"challenge":"c-123","type":"url_verification"}`
	var id *int64
	var outcome string
	if err := pool.QueryRow(ctx, `SELECT event_id, outcome FROM webhooks.ingest_signed('sl', $1::jsonb, convert_to($2, 'UTF8'))`,
		testsign.JSON(testsign.Slack(secret, handshake, time.Now())), handshake).Scan(&id, &outcome); err != nil || id != nil || outcome != "challenge" {
		t.Fatalf("signed url_verification: (%v, %q, %v), want (NULL, challenge)", id, outcome, err)
	}
	_, err := pool.Exec(ctx, `SELECT * FROM webhooks.ingest_signed('sl', '{}'::jsonb, convert_to($1, 'UTF8'))`, handshake)
	wantPgError(t, err, "28000", "pginbox: signature missing")
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'sl'`); n != 0 {
		t.Fatalf("url_verification wrote %d events", n)
	}

	_, err = pool.Exec(ctx, `SELECT webhooks.set_provider('sq', 'square', ARRAY[$1])`, secret)
	wantPgError(t, err, "22023", "the notification URL is required")
	for _, bad := range []string{"/webhooks/sq", "ftp://h/x", "https://h/x#f", " https://h/x", "https:///x"} {
		_, err = pool.Exec(ctx, `SELECT webhooks.set_provider('sq', 'square', ARRAY[$1], $2)`, secret, bad)
		wantPgError(t, err, "22023", "is not an absolute http(s) URL")
	}
	_, err = pool.Exec(ctx, `SELECT webhooks.set_provider('sl', 'slack', ARRAY[$1], 'https://h/x')`, secret)
	wantPgError(t, err, "22023", "its signature covers no URL")

	const url = "https://hooks.example.com/webhooks/sq"
	execSQL(t, pool, `SELECT webhooks.set_provider('sq', 'square', ARRAY[$1], $2)`, secret, url)
	body := `{"type":"payment.updated","event_id":"e-1"}`
	_, err = pool.Exec(ctx, `SELECT * FROM webhooks.ingest_signed('sq', $1::jsonb, convert_to($2, 'UTF8'))`,
		testsign.JSON(testsign.Square(secret, "http://10.0.0.5:8080/webhooks/sq", body)), body)
	wantPgError(t, err, "28000", "pginbox: signature mismatch")
	if err := pool.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_signed('sq', $1::jsonb, convert_to($2, 'UTF8'))`,
		testsign.JSON(testsign.Square(secret, url, body)), body).Scan(&outcome); err != nil || outcome != "created" {
		t.Fatalf("square signed for its URL: %q, %v", outcome, err)
	}
	// The URL is replaced with the secrets: signed for the old URL, refused.
	execSQL(t, pool, `SELECT webhooks.set_provider('sq', 'square', ARRAY[$1], $2)`, secret, url+"-v2")
	body2 := `{"type":"payment.updated","event_id":"e-2"}`
	_, err = pool.Exec(ctx, `SELECT * FROM webhooks.ingest_signed('sq', $1::jsonb, convert_to($2, 'UTF8'))`,
		testsign.JSON(testsign.Square(secret, url, body2)), body2)
	wantPgError(t, err, "28000", "pginbox: signature mismatch")
}
