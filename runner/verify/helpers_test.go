package verify

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pginbox/pginbox/internal/testsign"
)

// The signing helpers sign test deliveries with internal/testsign, from each
// provider's published recipe, independently of the code under test.

// macHex returns hex(HMAC-SHA256(key, msg)).
func macHex(key, msg string) string { return testsign.HMACHex([]byte(key), msg) }

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
	return testsign.StandardWebhooks(secret, id, body, time.Unix(ts, 0))
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

// The fuzz targets (beside each kind's tests) check that no input panics,
// that every error is a *RejectError with the right status and a known
// reason, and that whatever is accepted keeps its invariants.

var (
	verifyReasons = map[string]bool{
		ReasonSignatureMissing: true, ReasonSignatureMalformed: true, ReasonSignatureMismatch: true,
		ReasonTimestampMissing: true, ReasonTimestampMalformed: true, ReasonTimestampOutOfTolerance: true,
		ReasonSignatureHeaderTooLarge: true, ReasonTooManySignatures: true,
	}
	identifyReasons = map[string]bool{
		ReasonBodyNotJSON: true, ReasonKeyMissing: true, ReasonKeyInvalid: true,
		ReasonEventIDMismatch: true, ReasonEventTypeMissing: true, ReasonEventTypeInvalid: true,
	}
)

// checkFuzzReject fails unless err is nil or a *RejectError with status and a reason of reasons.
func checkFuzzReject(t *testing.T, err error, status int, reasons map[string]bool) {
	t.Helper()
	if err == nil {
		return
	}
	var re *RejectError
	if !errors.As(err, &re) || re.Status != status || !reasons[re.Reason] {
		t.Fatalf("unexpected error %#v", err)
	}
}

// checkSigs fails unless sigs is a non-empty list of SHA-256 sized signatures.
func checkSigs(t *testing.T, sigs [][]byte) {
	t.Helper()
	if len(sigs) == 0 {
		t.Fatal("accepted a header with no signature")
	}
	for _, s := range sigs {
		if len(s) != 32 {
			t.Fatalf("accepted a %d-byte signature", len(s))
		}
	}
}

// checkText fails unless s is storable as an external_id or event_type.
func checkText(t *testing.T, what, s string) {
	t.Helper()
	if s == "" || len(s) > 255 || !utf8.ValidString(s) || strings.TrimSpace(s) == "" || strings.ContainsRune(s, 0) {
		t.Fatalf("accepted %s %q", what, s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			t.Fatalf("accepted %s %q with a control character", what, s)
		}
	}
}

// verifyAll runs every kind's Verify on h and body; none may panic or return
// anything but a 401 rejection.
func verifyAll(t *testing.T, h http.Header, body []byte) {
	t.Helper()
	for _, kind := range Kinds() {
		p, err := New(kind, []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
		if err != nil {
			t.Fatal(err)
		}
		checkFuzzReject(t, p.Verify(h, body, time.Unix(1614265330, 0)), http.StatusUnauthorized, verifyReasons)
	}
}

const fuzzSig = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
