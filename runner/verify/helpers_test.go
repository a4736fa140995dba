package verify

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/testsign"
)

// The signing helpers sign test deliveries with internal/testsign, from each
// provider's published recipe, independently of the code under test.

// macHex returns hex(HMAC-SHA256(key, msg)).
func macHex(key, msg string) string { return testsign.HMACHex([]byte(key), msg) }

// macBase64 returns base64(HMAC-SHA256(key, msg)).
func macBase64(key []byte, msg string) string { return testsign.HMACBase64(key, msg) }

// sumeHeaders signs a Sume delivery at unix time ts.
func sumeHeaders(secret string, ts int64, body string) http.Header {
	return testsign.Sume(secret, body, time.Unix(ts, 0))
}

// stripeHeader signs a Stripe delivery at unix time ts.
func stripeHeader(secret string, ts int64, body string) http.Header {
	return testsign.Stripe(secret, body, time.Unix(ts, 0))
}

// githubHeader signs a GitHub delivery.
func githubHeader(secret, body string) http.Header { return testsign.GitHub(secret, body) }

// shopifyHeader signs a Shopify delivery.
func shopifyHeader(secret, body string) http.Header { return testsign.Shopify(secret, body) }

// swHeaders signs a Standard Webhooks delivery with id at unix time ts.
func swHeaders(t testing.TB, secret, id string, ts int64, body string) http.Header {
	t.Helper()
	h, err := testsign.StandardWebhooks(secret, id, body, time.Unix(ts, 0))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// headers builds an http.Header from name/value pairs.
func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// mustProvider builds a provider or fails the test.
func mustProvider(t testing.TB, kind string, secrets ...string) Provider {
	t.Helper()
	p, err := New(kind, secrets)
	if err != nil {
		t.Fatalf("New(%q): %v", kind, err)
	}
	return p
}

// checkReject fails the test unless err is nil (status 0) or a *RejectError
// with exactly status and reason.
func checkReject(t testing.TB, err error, status int, reason string) {
	t.Helper()
	if status == 0 {
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		return
	}
	var re *RejectError
	if !errors.As(err, &re) {
		t.Fatalf("got error %v (%T), want *RejectError %d %q", err, err, status, reason)
	}
	if re.Status != status || re.Reason != reason {
		t.Fatalf("got rejection %d %q, want %d %q", re.Status, re.Reason, status, reason)
	}
}
