package cli

import (
	"strings"

	"github.com/pginbox/pginbox/internal/envconfig"
)

// startWarnings are what serve warns about at start: settings that are
// valid but most likely not what the user meant. None holds a secret nor
// any part of one.
func startWarnings(env envconfig.Values) []string {
	var w []string
	if len(env.Providers) == 0 {
		w = append(w, "no provider is configured, so every delivery to POST /webhooks/{provider} answers 404: "+
			"set PGINBOX_PROVIDERS=name=kind (e.g. sume=sume) and PGINBOX_SECRET_<NAME>")
	}
	for _, p := range env.Providers {
		if p.Kind != "stripe" {
			continue
		}
		// Stripe signs webhooks with the endpoint's signing secret,
		// whsec_…; an API key (sk_…, rk_…) pasted instead makes every
		// delivery a 401.
		for _, s := range p.Secrets {
			if !strings.HasPrefix(s, "whsec_") {
				w = append(w, p.SecretVar+": a stripe secret does not start with whsec_: use the endpoint's signing secret "+
					"(Stripe dashboard, Webhooks, the endpoint, Signing secret), not an API key, or every delivery answers 401")
				break
			}
		}
	}
	return w
}
