package github_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/github"
	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/runner/verify"
)

func TestGitHubVerify(t *testing.T) {
	t.Parallel()
	const secret, oldSecret = "gh-secret-current", "gh-secret-previous"
	body := `{"action":"opened","issue":{"number":1}}`
	sig := providertest.MACHex(secret, body)
	raw := func(v string) http.Header { return providertest.Headers("X-Hub-Signature-256", v) }
	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		status  int
		reason  string
	}{
		{"valid", []string{secret}, providertest.GitHubHeader(secret, body), body, 0, ""},
		{"valid with the second of two secrets", []string{oldSecret, secret}, providertest.GitHubHeader(secret, body), body, 0, ""},
		{"wrong secret", []string{secret}, providertest.GitHubHeader("other", body), body, 401, verify.ReasonSignatureMismatch},
		{"tampered body", []string{secret}, providertest.GitHubHeader(secret, body), strings.Replace(body, "1", "2", 1), 401, verify.ReasonSignatureMismatch},
		{"missing header", []string{secret}, http.Header{}, body, 401, verify.ReasonSignatureMissing},
		{"legacy sha1 header only", []string{secret}, providertest.Headers("X-Hub-Signature", "sha1=0123"), body, 401, verify.ReasonSignatureMissing},
		{"malformed: no prefix", []string{secret}, raw(sig), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: sha1 prefix", []string{secret}, raw("sha1=" + sig), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: not hex", []string{secret}, raw("sha256=" + strings.Repeat("g", 64)), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: short", []string{secret}, raw("sha256=" + sig[:62]), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: two signatures", []string{secret}, raw("sha256=" + sig + ",sha256=" + sig), body, 401, verify.ReasonSignatureMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := providertest.MustProvider(t, "github", tt.secrets...).Verify(tt.h, []byte(tt.body), time.Time{})
			providertest.CheckReject(t, err, tt.status, tt.reason)
		})
	}
}

// TestGitHubVerifyDocsVector checks the example from GitHub's "Validating
// webhook deliveries" documentation.
func TestGitHubVerifyDocsVector(t *testing.T) {
	t.Parallel()
	p := providertest.MustProvider(t, "github", "It's a Secret to Everybody")
	h := providertest.Headers("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
	providertest.CheckReject(t, p.Verify(h, []byte("Hello, World!"), time.Now()), 0, "")
	providertest.CheckReject(t, p.Verify(h, []byte("Hello, World?"), time.Now()), 401, verify.ReasonSignatureMismatch)
}

func TestGitHubIdentify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		delivery string
		event    string
		body     string
		key      string
		typ      string
		reason   string
	}{
		{"with action", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "issues", `{"action":"opened"}`, "72d3162e-cc78-11e3-81ab-4c9367dc0958", "issues.opened", ""},
		{"without action", "d1", "push", `{"ref":"refs/heads/main"}`, "d1", "push", ""},
		{"empty action", "d1", "push", `{"action":""}`, "d1", "push", ""},
		{"non-string action", "d1", "push", `{"action":{"x":1}}`, "d1", "push", ""},
		{"nested action ignored", "d1", "push", `{"data":{"action":"x"}}`, "d1", "push", ""},
		{"delivery missing", "", "push", `{}`, "", "", verify.ReasonKeyMissing},
		{"delivery too long", strings.Repeat("d", 256), "push", `{}`, "", "", verify.ReasonKeyInvalid},
		{"event missing", "d1", "", `{"action":"opened"}`, "", "", verify.ReasonEventTypeMissing},
		{"event with action too long", "d1", strings.Repeat("e", 250), `{"action":"opened"}`, "", "", verify.ReasonEventTypeInvalid},
		{"form-encoded body", "d1", "push", `payload=%7B%7D`, "", "", verify.ReasonBodyNotJSON},
	}
	p := providertest.MustProvider(t, "github", "identify-only-secret-0123")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.delivery != "" {
				h.Set("X-GitHub-Delivery", tt.delivery)
			}
			if tt.event != "" {
				h.Set("X-GitHub-Event", tt.event)
			}
			d, err := p.Identify(h, []byte(tt.body))
			if tt.reason != "" {
				providertest.CheckReject(t, err, http.StatusBadRequest, tt.reason)
				return
			}
			providertest.CheckReject(t, err, 0, "")
			if d.ExternalID != tt.key || d.EventType != tt.typ || string(d.Payload) != tt.body {
				t.Fatalf("Identify = %+v, want key %q type %q", d, tt.key, tt.typ)
			}
		})
	}
}

func FuzzParseGitHubSignature(f *testing.F) {
	for _, s := range []string{"", "sha256=" + providertest.FuzzSig, "sha256=", "sha1=" + providertest.FuzzSig, " sha256=" + providertest.FuzzSig + " ", "sha256=" + providertest.FuzzSig + "00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		sig, err := github.ParseGitHubSignature(header)
		providertest.CheckFuzzReject(t, err, http.StatusUnauthorized, providertest.VerifyReasons)
		if err == nil {
			providertest.CheckSigs(t, [][]byte{sig})
		}
		providertest.VerifyAll(t, providertest.Headers("X-Hub-Signature-256", header), []byte("Hello, World!"))
	})
}
