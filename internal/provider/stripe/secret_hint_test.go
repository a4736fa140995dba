package stripe_test

import (
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/provider/stripe"
)

func TestSecretHint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		secret string
		hint   bool
	}{
		{"whsec_0123456789abcdef0123", false},
		{"sk_live_Sentinel0123456789", true},
		{"rk_test_Sentinel0123456789", true},
		{"Sentinel0123456789", true},
	} {
		got := stripe.SecretHint(tc.secret)
		if (got != "") != tc.hint {
			t.Errorf("SecretHint(%q) = %q, want a hint: %v", tc.secret, got, tc.hint)
		}
		if strings.Contains(got, "Sentinel") {
			t.Errorf("SecretHint(%q) quotes the secret: %q", tc.secret, got)
		}
	}
}
