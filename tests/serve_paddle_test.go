package tests

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/paddle/paddlefake"
	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner"
	"github.com/pginbox/pginbox/runner/verify"
)

// startLoggedServer starts a runner with providers whose log (Info and up)
// is returned.
func startLoggedServer(t *testing.T, dbURL string, providers map[string][2]string) (string, *logBuffer) {
	t.Helper()
	cfg := runner.Config{Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", ReconcileEvery: -1, ChecksEvery: -1, Providers: map[string]verify.Provider{}}
	for name, ks := range providers {
		p, err := verify.New(ks[0], strings.Split(ks[1], ","))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Providers[name] = p
	}
	logs := &logBuffer{}
	srv, err := runner.New(context.Background(), cfg, dbURL, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("server did not stop")
		}
	})
	return "http://" + srv.Addr().String(), logs
}

// TestServePaddle: over HTTP, a Paddle delivery is stored under its
// event_id with its event_type, and a retry of it is a duplicate; during a
// rotation a delivery signed with the old secret, or carrying one h1 per
// secret, is accepted; a forged, stale or unsigned one is 401 with its
// reason in the log; a signed body without event_id is 400. None of the
// refused deliveries writes a row.
func TestServePaddle(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	const oldSecret, newSecret = "pdl_ntfset_01serve_old_0123", "pdl_ntfset_01serve_new_0123"
	base, logs := startLoggedServer(t, conf.URL(), map[string][2]string{"billing": {"paddle", newSecret + "," + oldSecret}})
	client := &http.Client{Timeout: 10 * time.Second}
	url := base + "/webhooks/billing"
	now := time.Now()
	body := func(id string) string {
		return fmt.Sprintf(`{"event_id": %q, "event_type": "subscription.updated", "occurred_at": "2026-12-02T01:00:00.000000Z", "data": {"id": "sub_1", "customer_id": "ctm_1"}}`, id)
	}
	send := func(h http.Header, b string) (int, map[string]any) { return post(t, client, url, h, []byte(b)) }

	b1 := body("evt_serve_1")
	if status, out := send(testsign.Paddle(newSecret, b1, now), b1); status != 200 || out["outcome"] != "created" {
		t.Fatalf("valid: %d %v", status, out)
	}
	if status, out := send(testsign.Paddle(newSecret, b1, now.Add(time.Second)), b1); status != 200 || out["outcome"] != "duplicate" {
		t.Fatalf("retry: %d %v", status, out)
	}
	b2 := body("evt_serve_2")
	if status, out := send(testsign.Paddle(oldSecret, b2, now), b2); status != 200 || out["outcome"] != "created" {
		t.Fatalf("old secret during rotation: %d %v", status, out)
	}
	b3 := body("evt_serve_3")
	ts := fmt.Sprint(now.Unix())
	both := http.Header{"Paddle-Signature": {"ts=" + ts + ";h1=" + testsign.HMACHex([]byte("pdl_ntfset_01some_other_key"), ts, ":", b3) +
		";h1=" + testsign.HMACHex([]byte(newSecret), ts, ":", b3)}}
	if status, out := send(both, b3); status != 200 || out["outcome"] != "created" {
		t.Fatalf("two h1: %d %v", status, out)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'billing' AND event_type = 'subscription.updated'
		AND external_id IN ('evt_serve_1', 'evt_serve_2', 'evt_serve_3')`); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}

	refused := []struct {
		name   string
		h      http.Header
		body   string
		status int
		reason string
	}{
		{"forged", testsign.Paddle("pdl_ntfset_01guessed_secret", body("evt_forged"), now), body("evt_forged"), 401, "signature mismatch"},
		{"stale", testsign.Paddle(newSecret, body("evt_stale"), now.Add(-6*time.Minute)), body("evt_stale"), 401, "timestamp out of tolerance"},
		{"unsigned", http.Header{}, body("evt_unsigned"), 401, "signature missing"},
		{"no event_id", testsign.Paddle(newSecret, `{"event_type": "subscription.updated"}`, now), `{"event_type": "subscription.updated"}`, 400, "idempotency key missing"},
	}
	for _, r := range refused {
		status, out := send(r.h, r.body)
		if status != r.status || out["error"] != r.reason {
			t.Errorf("%s: %d %v, want %d %q", r.name, status, out, r.status, r.reason)
		}
		if want := fmt.Sprintf("provider=billing status=%d reason=%q", r.status, r.reason); !strings.Contains(logs.String(), want) {
			t.Errorf("%s: the log has no line with %s:\n%s", r.name, want, logs.String())
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 3 {
		t.Fatalf("%d rows after the refusals, want 3", n)
	}
}

// TestServeStandardWebhooksV1a: over HTTP, one standardwebhooks provider
// configured with a whsec_ secret and a whpk_ public key accepts v1
// deliveries and v1a (Ed25519) ones, and refuses a v1a signature made with
// another private key (401, in the log) and one whose body was altered.
func TestServeStandardWebhooksV1a(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	seed := sha256.Sum256([]byte("pginbox v1a serve test key"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	otherSeed := sha256.Sum256([]byte("another sender"))
	other := ed25519.NewKeyFromSeed(otherSeed[:])
	const whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	base, logs := startLoggedServer(t, conf.URL(), map[string][2]string{"clerk": {"standardwebhooks", whsec + "," + testsign.Whpk(priv)}})
	client := &http.Client{Timeout: 10 * time.Second}
	url := base + "/webhooks/clerk"
	body := `{"type": "user.created", "data": {"id": "user_1"}}`
	now := time.Now()
	for _, c := range []struct {
		name   string
		h      http.Header
		body   string
		status int
		reason string
	}{
		{"v1a", testsign.StandardWebhooksV1a(priv, "msg_v1a", body, now), body, 200, ""},
		{"v1", testsign.StandardWebhooks(whsec, "msg_v1", body, now), body, 200, ""},
		{"v1a with another key", testsign.StandardWebhooksV1a(other, "msg_other", body, now), body, 401, "signature mismatch"},
		{"v1a, body altered", testsign.StandardWebhooksV1a(priv, "msg_altered", body, now), strings.Replace(body, "user_1", "user_2", 1), 401, "signature mismatch"},
	} {
		status, out := post(t, client, url, c.h, []byte(c.body))
		if status != c.status || (c.status == 200 && out["outcome"] != "created") || (c.status != 200 && out["error"] != c.reason) {
			t.Errorf("%s: %d %v, want %d %q", c.name, status, out, c.status, c.reason)
		}
	}
	if !strings.Contains(logs.String(), `provider=clerk status=401 reason="signature mismatch"`) {
		t.Errorf("no 401 with its reason in the log:\n%s", logs.String())
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'clerk'`); n != 2 {
		t.Fatalf("%d rows, want the v1 and the v1a delivery", n)
	}
}

// TestServeBackfillsPaddleEventLog: with a paddle provider's
// PGINBOX_API_URL_<NAME> and key, serve reads Paddle's event list (a strict
// fake of GET /events) after each scheduled reconcile pass and stores what
// never arrived as a webhook; the checkpoint follows.
func TestServeBackfillsPaddleEventLog(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	f := paddlefake.New("pdl_live_apikey_events_read")
	defer f.Close()
	end := time.Now().Add(-10 * time.Minute)
	for i := range 250 {
		at := end.Add(-time.Duration(i) * time.Second)
		f.Add(paddlefake.Event{ID: paddlefake.ID(at, i), Type: "transaction.completed", OccurredAt: at})
	}
	env := map[string]string{
		"PGINBOX_PROVIDERS": "billing=paddle", "PGINBOX_SECRET_BILLING": "pdl_ntfset_01serve_backfill_0123",
		"PGINBOX_API_URL_BILLING": f.URL, "PGINBOX_API_KEY_BILLING": "pdl_live_apikey_events_read", "PGINBOX_BACKFILL_LOOKBACK": "1h",
	}
	cfg, err := runner.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReconcileEvery = 300 * time.Millisecond
	startServer(t, conf.URL(), cfg, nil)
	waitFor(t, 20*time.Second, "every Paddle event stored", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'billing' AND source = 'backfill'`) == 250
	})
	waitFor(t, 10*time.Second, "a checkpoint", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.backfill_checkpoints WHERE provider = 'billing' AND read_until > now() - interval '2 minutes' AND recovered_total = 250`) == 1
	})
}
