package tests

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner"
)

// unsignedKinds are the providers whose idempotency key is a header the
// signature does not cover, with a signer (key → headers) for one body.
var unsignedKinds = map[string]struct {
	kind, secret string
	body         func(n int) string
	sign         func(secret, key, body string) http.Header
}{
	"gh": {"github", "gh-unsigned-key-secret-01", func(n int) string { return fmt.Sprintf(`{"action": "opened", "issue": {"number": %d}}`, n) },
		func(secret, key, body string) http.Header {
			h := testsign.GitHub(secret, body)
			h.Set("X-GitHub-Delivery", key)
			h.Set("X-GitHub-Event", "issues")
			return h
		}},
	"shop": {"shopify", "shpss_unsigned_key_secret_01", func(n int) string { return fmt.Sprintf(`{"id": %d, "email": "a@example.com"}`, n) },
		func(secret, key, body string) http.Header {
			h := testsign.Shopify(secret, body)
			h.Set("X-Shopify-Event-Id", key)
			h.Set("X-Shopify-Topic", "orders/create")
			return h
		}},
	"lin": {"linear", "lin-unsigned-key-secret-01", func(n int) string {
		return fmt.Sprintf(`{"action": "update", "type": "Issue", "data": {"n": %d}, "webhookTimestamp": %d}`, n, time.Now().UnixMilli())
	},
		func(secret, key, body string) http.Header { return testsign.Linear(secret, key, body) }},
	"sume": {"sume", "sume-unsigned-key-secret-01", func(n int) string { return fmt.Sprintf(`{"type": "file.scanned", "n": %d}`, n) },
		func(secret, key, body string) http.Header {
			h := testsign.Sume(secret, body, time.Now())
			h.Set("X-Sume-Event-Id", key)
			return h
		}},
}

func unsignedProviders() map[string][2]string {
	p := map[string][2]string{"stripe": {"stripe", "whsec_unsigned_key_control_01"}}
	for name, k := range unsignedKinds {
		p[name] = [2]string{k.kind, k.secret}
	}
	return p
}

// TestServeReplayedCapturedBody: a captured GitHub, Shopify, Linear or
// header-keyed Sume delivery sent again under fresh ids (the key is not signed, so anyone
// who saw one delivery can mint new ones) is answered 200 duplicate with the
// original event_id, stores nothing, and the handler runs once.
func TestServeReplayedCapturedBody(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	var mu sync.Mutex
	runs := map[string]int{} // provider → handler runs
	handler := runner.HandlerFunc(func(_ context.Context, _ pgx.Tx, ev *runner.Event) error {
		mu.Lock()
		runs[ev.Provider]++
		mu.Unlock()
		return nil
	})
	srv := startServer(t, conf.URL(), runner.Config{Handler: handler}, unsignedProviders())
	client := &http.Client{Timeout: 10 * time.Second}
	for name, k := range unsignedKinds {
		body := k.body(1)
		status, first := post(t, client, srv.Base+"/webhooks/"+name, k.sign(k.secret, name+"-original", body), []byte(body))
		if status != 200 || first["outcome"] != "created" {
			t.Fatalf("%s: first delivery %d %v", name, status, first)
		}
		for i := range 3 {
			key := fmt.Sprintf("%s-replay-%d", name, i)
			status, res := post(t, client, srv.Base+"/webhooks/"+name, k.sign(k.secret, key, body), []byte(body))
			if status != 200 || res["outcome"] != "duplicate" || res["event_id"] != first["event_id"] {
				t.Errorf("%s: replay under %s: %d %v, want 200 duplicate of event %v", name, key, status, res, first["event_id"])
			}
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1`, name); n != 1 {
			t.Errorf("%s: %d events stored, want 1", name, n)
		}
	}
	waitFor(t, 20*time.Second, "every event processed", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status <> 'processed'`) == 0
	})
	time.Sleep(300 * time.Millisecond) // a second run, if any, would land now
	mu.Lock()
	defer mu.Unlock()
	for name := range unsignedKinds {
		if runs[name] != 1 {
			t.Errorf("%s: the handler ran %d times, want once", name, runs[name])
		}
	}
}

// TestServeDifferentBodyUnderUnsignedKey: a validly signed but different
// body under the key of a pending event of such a provider never replaces
// its payload ('updated'): it is answered duplicate, nothing changes, and
// pginbox_unsigned_key_conflicts_total counts it. A provider whose key is
// signed (Stripe) still reconciles a pending payload.
func TestServeDifferentBodyUnderUnsignedKey(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	srv := startServer(t, conf.URL(), runner.Config{}, unsignedProviders()) // no handler: events stay pending
	client := &http.Client{Timeout: 10 * time.Second}
	for name, k := range unsignedKinds {
		original, forged := k.body(1), k.body(2)
		status, first := post(t, client, srv.Base+"/webhooks/"+name, k.sign(k.secret, "pending-key", original), []byte(original))
		if status != 200 || first["outcome"] != "created" {
			t.Fatalf("%s: first delivery %d %v", name, status, first)
		}
		status, res := post(t, client, srv.Base+"/webhooks/"+name, k.sign(k.secret, "pending-key", forged), []byte(forged))
		if status != 200 || res["outcome"] != "duplicate" || res["event_id"] != first["event_id"] {
			t.Errorf("%s: different body under the pending key: %d %v, want 200 duplicate", name, status, res)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1 AND external_id = 'pending-key'
			AND payload = $2::jsonb AND revision = 1`, name, original); n != 1 {
			t.Errorf("%s: the pending event's payload changed", name)
		}
		if got := metricValue(t, srv.Admin, "pginbox_unsigned_key_conflicts_total", `provider="`+name+`"`); got != 1 {
			t.Errorf("%s: pginbox_unsigned_key_conflicts_total %d, want 1", name, got)
		}
	}
	// Control: Stripe signs its key (the body id), so a corrected payload of a
	// pending event is reconciled as before.
	const secret = "whsec_unsigned_key_control_01"
	b1, b2 := `{"id": "evt_1", "type": "invoice.paid", "v": 1}`, `{"id": "evt_1", "type": "invoice.paid", "v": 2}`
	post(t, client, srv.Base+"/webhooks/stripe", testsign.Stripe(secret, b1, time.Now()), []byte(b1))
	if status, res := post(t, client, srv.Base+"/webhooks/stripe", testsign.Stripe(secret, b2, time.Now()), []byte(b2)); status != 200 || res["outcome"] != "updated" {
		t.Errorf("stripe: corrected payload %d %v, want updated", status, res)
	}
}
