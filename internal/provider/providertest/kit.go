package providertest

import (
	"net/http"
	"time"
)

// Kit is what a provider kind's folder gives the tests shared by every kind
// (internal/provider/<kind>/<kind>test, listed by package kits): valid
// secrets, a sample delivery and its signer, so those tests range over the
// kinds instead of spelling each one. A kit signs from the provider's
// published recipe (internal/testsign), independently of the verifier.
type Kit struct {
	// Kind is the kind's name, as in the list of kinds.
	Kind string
	// Secrets are two valid secrets (rotation), each at least
	// verify.MinSecretBytes and accepted by webhooks.set_provider.
	Secrets [2]string
	// URL is the notification URL the kind signs (square), else empty.
	URL string
	// Body returns a sample delivery whose idempotency key is key: in the
	// body, or in a header Sign sets. Bodies of different keys differ.
	Body func(key string) string
	// Sign returns the headers of body signed with secret at at, with the
	// headers that carry the key and the event type where the kind sends
	// them there.
	Sign func(secret, body, key string, at time.Time) http.Header
	// EventType is the event type Identify returns for Body.
	EventType string
}
