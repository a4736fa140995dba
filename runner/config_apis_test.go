package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/runner/verify"
)

// TestProviderAPIErrorsNameTheSetting: a provider API setting backfill
// cannot use is named the way it was given: the variable for ConfigFromEnv
// (an *envconfig.Error), the Config field (and its variable) for Validate.
func TestProviderAPIErrorsNameTheSetting(t *testing.T) {
	t.Parallel()
	shop, err := verify.New("shopify", []string{"shpss_0123456789abcdef0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	err = Config{Providers: map[string]verify.Provider{"shop-1": shop},
		ProviderAPIs: map[string]ProviderAPI{"shop-1": {URL: "https://api.shopify.test"}}}.Validate()
	want := `config: ProviderAPIs["shop-1"].URL (PGINBOX_API_URL_SHOP_1): provider "shop-1" is of kind "shopify", which has no API for backfill`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Validate: %v, want %q…", err, want)
	}

	env := map[string]string{"PGINBOX_PROVIDERS": "shop-1=shopify", "PGINBOX_SECRET_SHOP_1": "shpss_0123456789abcdef0123456789abcdef",
		"PGINBOX_API_URL_SHOP_1": "https://api.shopify.test"}
	_, err = ConfigFromEnv(func(k string) string { return env[k] })
	var envErr *envconfig.Error
	if !errors.As(err, &envErr) || envErr.Var != "PGINBOX_API_URL_SHOP_1" ||
		!strings.HasPrefix(err.Error(), `PGINBOX_API_URL_SHOP_1: provider "shop-1" is of kind "shopify"`) {
		t.Errorf("ConfigFromEnv: %v, want an *envconfig.Error naming PGINBOX_API_URL_SHOP_1", err)
	}
}
