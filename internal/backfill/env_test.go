package backfill

import (
	"errors"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/provider/sume"
)

// TestAPIs: which providers get which API from the environment, and which
// settings are refused (an *envconfig.ProviderError naming the provider
// and the setting; configuration names the variable).
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
	apis, err := APIs(map[string]string{"sume-eu": "sume", "sume": "sume", "gh": "github"}, envconfig.Endpoints(getenv))
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

	for name, tc := range map[string]struct {
		env     map[string]string
		kinds   map[string]string
		setting envconfig.APISetting
		want    string
	}{
		"URL for a kind without an API": {map[string]string{"PGINBOX_API_URL_SHOP_1": "https://api.shopify.test"},
			map[string]string{"shop-1": "shopify"}, envconfig.APIURL, `PGINBOX_API_URL_SHOP_1: provider "shop-1" is of kind "shopify"`},
		"relative URL": {map[string]string{"PGINBOX_API_URL_SUME": "api.sume.test"},
			map[string]string{"sume": "sume"}, envconfig.APIURL, `PGINBOX_API_URL_SUME: provider sume: API URL: not an absolute http(s) URL (the value is not repeated`},
	} {
		_, err := APIs(tc.kinds, envconfig.Endpoints(func(k string) string { return tc.env[k] }))
		var pe *envconfig.ProviderError
		if !errors.As(err, &pe) || pe.Setting != tc.setting || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an *envconfig.ProviderError containing %q", name, err, tc.want)
		}
	}
}
