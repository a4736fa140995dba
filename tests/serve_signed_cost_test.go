package tests

import (
	"crypto/ed25519"
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/testsign"
)

// TestServeRefusesBeforeVerifying: over HTTP, a standardwebhooks delivery
// with a stale timestamp is answered 401 timestamp out of tolerance whatever
// its v1a entries, and one with more than 2 v1a entries 401 too many
// asymmetric signatures, even when one of them is valid; two entries (a
// sender rotating its key) are accepted. Nothing refused is stored.
// (TestStandardWebhooksRefusesBeforeVerifying shows that no Ed25519
// verification precedes those refusals.)
func TestServeRefusesBeforeVerifying(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	seed := sha256.Sum256([]byte("pginbox cost serve test key"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	otherSeed := sha256.Sum256([]byte("a key nobody configured"))
	other := ed25519.NewKeyFromSeed(otherSeed[:])
	base, _ := startLoggedServer(t, conf.URL(), map[string][2]string{"acme": {"standardwebhooks", testsign.Whpk(priv)}})
	client := &http.Client{Timeout: 10 * time.Second}
	body := `{"type": "user.created", "data": {"id": "user_1"}}`
	now := time.Now()
	// signed returns the delivery id signed at by each of keys, in order.
	signed := func(id string, at time.Time, keys ...ed25519.PrivateKey) http.Header {
		var entries []string
		for _, k := range keys {
			entries = append(entries, testsign.StandardWebhooksV1a(k, id, body, at).Get("webhook-signature"))
		}
		h := testsign.StandardWebhooksV1a(priv, id, body, at)
		h.Set("webhook-signature", strings.Join(entries, " "))
		return h
	}
	for _, c := range []struct {
		name   string
		h      http.Header
		status int
		reason string
	}{
		{"stale, two v1a of another key", signed("msg_stale", now.Add(-6*time.Minute), other, other), 401, "timestamp out of tolerance"},
		{"stale, valid", signed("msg_stale_valid", now.Add(-6*time.Minute), priv), 401, "timestamp out of tolerance"},
		{"three v1a, the last valid", signed("msg_three", now, other, other, priv), 401, "too many asymmetric signatures"},
		{"two v1a, the second valid", signed("msg_two", now, other, priv), 200, ""},
	} {
		status, out := post(t, client, base+"/webhooks/acme", c.h, []byte(body))
		if status != c.status || (c.status == 200 && out["outcome"] != "created") || (c.status != 200 && out["error"] != c.reason) {
			t.Errorf("%s: %d %v, want %d %q", c.name, status, out, c.status, c.reason)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'acme'`); n != 1 {
		t.Fatalf("%d rows, want the one accepted delivery", n)
	}
}
