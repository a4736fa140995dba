package backfill

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/provider/sume"
)

// TestAPIs: which providers get which API from the environment, and which
// settings are refused or ignored.
func TestAPIs(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"PGINBOX_API_URL_SUME_EU": "https://eu.sume.test/",
		"PGINBOX_API_KEY_SUME_EU": "eu-key",
		"PGINBOX_API_KEY_SUME":    "only-a-key",
		"PGINBOX_API_KEY_GH":      "ignored: no URL",
		"PGINBOX_API_URL_LEGACY":  "https://legacy.test",
	}
	getenv := func(k string) string { return env[k] }
	var logs strings.Builder
	apis, err := APIs(map[string]string{"sume-eu": "sume", "sume": "sume", "gh": "github"}, envconfig.Endpoints(getenv),
		slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	eu, ok := apis["sume-eu"].(*sume.StatusAPI)
	if !ok {
		t.Fatalf("sume-eu: %#v", apis["sume-eu"])
	}
	euProvider, euBase, euKey := eu.Config()
	if euBase != "https://eu.sume.test" || euKey != "eu-key" || euProvider != "sume-eu" ||
		eu.Origin() != (Origin{Scheme: "https", Host: "eu.sume.test", Port: "443"}) {
		t.Fatalf("sume-eu: %#v", apis["sume-eu"])
	}
	if len(apis) != 1 {
		t.Fatalf("APIs %v: want only sume-eu (no URL, no API; unlisted providers have none)", apis)
	}
	for _, v := range []string{"PGINBOX_API_KEY_SUME is set but PGINBOX_API_URL_SUME is not", "PGINBOX_API_KEY_GH is set"} {
		if !strings.Contains(logs.String(), v) {
			t.Errorf("no warning %q in %s", v, logs.String())
		}
	}

	for name, tc := range map[string]struct {
		env   map[string]string
		kinds map[string]string
		want  string
	}{
		"URL for a kind without an API": {map[string]string{"PGINBOX_API_URL_SHOP_1": "https://api.shopify.test"},
			map[string]string{"shop-1": "shopify"}, `PGINBOX_API_URL_SHOP_1: provider "shop-1" is of kind "shopify"`},
		"relative URL": {map[string]string{"PGINBOX_API_URL_SUME": "api.sume.test"},
			map[string]string{"sume": "sume"}, `PGINBOX_API_URL_SUME: provider sume: API URL: not an absolute http(s) URL (the value is not repeated`},
	} {
		_, err := APIs(tc.kinds, envconfig.Endpoints(func(k string) string { return tc.env[k] }), quietLogger)
		var cfgErr *envconfig.Error
		if !errors.As(err, &cfgErr) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a *envconfig.Error containing %q", name, err, tc.want)
		}
	}
}
