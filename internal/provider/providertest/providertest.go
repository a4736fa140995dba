// Package providertest holds what the provider kinds' tests share: signing
// helpers over internal/testsign (each provider's published recipe,
// independently of the code under test), checks on rejections and on what
// is accepted, and the invariants every fuzz target asserts. It is imported
// by tests only.
package providertest

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner/verify"
)

// The signing helpers sign test deliveries with internal/testsign, from each
// provider's published recipe, independently of the code under test.

// MACHex returns hex(HMAC-SHA256(key, msg)).
func MACHex(key, msg string) string { return testsign.HMACHex([]byte(key), msg) }

// SumeHeaders signs a Sume delivery at unix time ts.
func SumeHeaders(secret string, ts int64, body string) http.Header {
	return testsign.Sume(secret, body, time.Unix(ts, 0))
}

// StripeHeader signs a Stripe delivery at unix time ts.
func StripeHeader(secret string, ts int64, body string) http.Header {
	return testsign.Stripe(secret, body, time.Unix(ts, 0))
}

// PaddleHeader signs a Paddle delivery at unix time ts.
func PaddleHeader(secret string, ts int64, body string) http.Header {
	return testsign.Paddle(secret, body, time.Unix(ts, 0))
}

// GitHubHeader signs a GitHub delivery.
func GitHubHeader(secret, body string) http.Header { return testsign.GitHub(secret, body) }

// ShopifyHeader signs a Shopify delivery.
func ShopifyHeader(secret, body string) http.Header { return testsign.Shopify(secret, body) }

// SWHeaders signs a Standard Webhooks delivery with id at unix time ts.
func SWHeaders(t testing.TB, secret, id string, ts int64, body string) http.Header {
	t.Helper()
	return testsign.StandardWebhooks(secret, id, body, time.Unix(ts, 0))
}

// Headers builds an http.Header from name/value pairs.
func Headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// MustProvider builds a provider or fails the test.
func MustProvider(t testing.TB, kind string, secrets ...string) verify.Provider {
	t.Helper()
	p, err := verify.NewWithURL(kind, secrets, NotificationURL)
	if err != nil {
		t.Fatalf("verify.NewWithURL(%q): %v", kind, err)
	}
	return p
}

// CheckReject fails the test unless err is nil (status 0) or a *verify.RejectError
// with exactly status and reason.
func CheckReject(t testing.TB, err error, status int, reason string) {
	t.Helper()
	if status == 0 {
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		return
	}
	var re *verify.RejectError
	if !errors.As(err, &re) {
		t.Fatalf("got error %v (%T), want *verify.RejectError %d %q", err, err, status, reason)
	}
	if re.Status != status || re.Reason != reason {
		t.Fatalf("got rejection %d %q, want %d %q", re.Status, re.Reason, status, reason)
	}
}

// The fuzz targets (beside each kind's tests) check that no input panics,
// that every error is a *verify.RejectError with the right status and a known
// reason, and that whatever is accepted keeps its invariants.

// VerifyReasons are the reasons Verify may give (401) and IdentifyReasons
// those Identify may give (400).
var (
	VerifyReasons = map[string]bool{
		verify.ReasonSignatureMissing: true, verify.ReasonSignatureMalformed: true, verify.ReasonSignatureMismatch: true,
		verify.ReasonTimestampMissing: true, verify.ReasonTimestampMalformed: true, verify.ReasonTimestampOutOfTolerance: true,
		verify.ReasonSignatureHeaderTooLarge: true, verify.ReasonTooManySignatures: true,
		verify.ReasonTooManyAsymmetricSignatures: true,
	}
	IdentifyReasons = map[string]bool{
		verify.ReasonBodyNotJSON: true, verify.ReasonBodyTooDeep: true, verify.ReasonKeyMissing: true, verify.ReasonKeyInvalid: true,
		verify.ReasonEventIDMismatch: true, verify.ReasonEventTypeMissing: true, verify.ReasonEventTypeInvalid: true,
	}
)

// CheckFuzzReject fails unless err is nil or a *verify.RejectError with status and a reason of reasons.
func CheckFuzzReject(t *testing.T, err error, status int, reasons map[string]bool) {
	t.Helper()
	if err == nil {
		return
	}
	var re *verify.RejectError
	if !errors.As(err, &re) || re.Status != status || !reasons[re.Reason] {
		t.Fatalf("unexpected error %#v", err)
	}
}

// CheckSigs fails unless sigs is a non-empty list of SHA-256 sized signatures.
func CheckSigs(t *testing.T, sigs [][]byte) {
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

// CheckText fails unless s is storable as an external_id or event_type.
func CheckText(t *testing.T, what, s string) {
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

// VerifyAll runs every kind's Verify on h and body; none may panic or return
// anything but a 401 rejection.
func VerifyAll(t *testing.T, h http.Header, body []byte) {
	t.Helper()
	for _, kind := range verify.Kinds() {
		p, err := verify.NewWithURL(kind, []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, NotificationURL)
		if err != nil {
			t.Fatal(err)
		}
		CheckFuzzReject(t, p.Verify(h, body, time.Unix(1614265330, 0)), http.StatusUnauthorized, VerifyReasons)
	}
}

// FuzzSig is a well-formed hex HMAC-SHA256 the fuzz targets seed headers with.
const FuzzSig = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

// SlackHeaders signs a Slack delivery at unix time ts.
func SlackHeaders(secret string, ts int64, body string) http.Header {
	return testsign.Slack(secret, body, time.Unix(ts, 0))
}

// LinearHeaders signs a Linear delivery with its Linear-Delivery id.
func LinearHeaders(secret, delivery, body string) http.Header {
	return testsign.Linear(secret, delivery, body)
}

// SquareHeader signs a Square delivery to notificationURL.
func SquareHeader(key, notificationURL, body string) http.Header {
	return testsign.Square(key, notificationURL, body)
}

// NotificationURL is the URL MustProvider and VerifyAll build the verifiers
// of kinds that sign the URL they are posted to (square) with.
const NotificationURL = "https://hooks.example.com/webhooks/square"
