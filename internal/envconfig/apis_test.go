package envconfig

import (
	"slices"
	"testing"
)

// TestAPIWarnings: a key without its URL is warned about, by variable,
// providers in order; a URL with or without a key, or nothing, is not.
func TestAPIWarnings(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"PGINBOX_API_URL_SUME_EU": "https://eu.sume.test/",
		"PGINBOX_API_KEY_SUME_EU": "eu-key",
		"PGINBOX_API_KEY_SUME":    "only-a-key",
		"PGINBOX_API_KEY_GH":      "ignored: no URL",
		"PGINBOX_API_URL_LEGACY":  "https://legacy.test",
	}
	got := APIWarnings([]string{"sume-eu", "sume", "gh", "legacy", "none"}, Endpoints(func(k string) string { return env[k] }))
	want := []string{
		"backfill: PGINBOX_API_KEY_GH is set but PGINBOX_API_URL_GH is not: the key is ignored and the provider's API is never contacted",
		"backfill: PGINBOX_API_KEY_SUME is set but PGINBOX_API_URL_SUME is not: the key is ignored and the provider's API is never contacted",
	}
	if !slices.Equal(got, want) {
		t.Errorf("APIWarnings:\n got  %q\n want %q", got, want)
	}
}

// TestProviderErrorNamesTheVariable: backfill says what is wrong with a
// provider's setting; the error names the variable that set it.
func TestProviderErrorNamesTheVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  *ProviderError
		want string
	}{
		{&ProviderError{Provider: "sume-eu", Setting: APIURL, Msg: "not a URL"}, "PGINBOX_API_URL_SUME_EU: not a URL"},
		{&ProviderError{Provider: "gh", Setting: APIKey, Msg: "not a PEM key"}, "PGINBOX_API_KEY_GH: not a PEM key"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", *tc.err, got, tc.want)
		}
		if e := tc.err.Env(); e.Error() != tc.want {
			t.Errorf("%+v: Env() %q, want %q", *tc.err, e.Error(), tc.want)
		}
	}
}
