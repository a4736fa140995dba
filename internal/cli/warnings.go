package cli

import (
	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/provider"
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
		k, ok := provider.Lookup(p.Kind)
		if !ok || k.SecretHint == nil {
			continue
		}
		for _, s := range p.Secrets {
			if hint := k.SecretHint(s); hint != "" {
				w = append(w, p.SecretVar+": "+hint)
				break
			}
		}
	}
	return w
}
