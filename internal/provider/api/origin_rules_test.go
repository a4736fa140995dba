package api

import (
	"strings"
	"testing"
)

// TestParseOriginRules: an API URL is https, or http on loopback only (the
// key would cross the network in clear); credentials in it are refused; and
// no error repeats a value that may be a key pasted into the wrong variable.
func TestParseOriginRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, err string // err "": accepted
	}{
		{"https://api.sume.test", ""},
		{"http://127.0.0.1:8080", ""},
		{"http://127.8.9.10", ""},
		{"http://[::1]:9000/v1", ""},
		{"http://localhost:9000", ""},
		{"http://api.sume.test", "http:// to api.sume.test would send the key in clear"},
		{"http://10.0.0.5:8080", "use https (http is allowed on loopback only)"},
		{"http://[::ffff:10.0.0.5]", "use https"},
		{"http://localhost.evil.test", "use https"},
		{"https://user:SENTINELpw@api.sume.test", "carries credentials in the URL"},
		{"sk_live_SENTINEL0123456789", "not an absolute http(s) URL (the value is not repeated"},
		{"https://%zzSENTINEL", "not an absolute http(s) URL"},
		{"user:SENTINELpw@api.sume.test", "not an absolute http(s) URL"},
	} {
		_, err := ParseOrigin(tc.raw)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.raw, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.raw, err, tc.err)
		case err != nil && strings.Contains(err.Error(), "SENTINEL"):
			t.Errorf("%s: the error repeats the value: %v", tc.raw, err)
		}
	}
}
