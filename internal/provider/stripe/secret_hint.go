package stripe

import "strings"

// SecretHint says what is wrong with a secret that does not look like an
// endpoint's signing secret: Stripe signs webhooks with the endpoint's
// whsec_… secret, and an API key (sk_…, rk_…) pasted instead makes every
// delivery a 401. It returns "" for a whsec_ secret and never quotes the
// secret.
func SecretHint(secret string) string {
	if strings.HasPrefix(secret, "whsec_") {
		return ""
	}
	return "a stripe secret does not start with whsec_: use the endpoint's signing secret " +
		"(Stripe dashboard, Webhooks, the endpoint, Signing secret), not an API key, or every delivery answers 401"
}
