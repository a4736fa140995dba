package provider

import (
	"slices"

	"github.com/pginbox/pginbox/internal/provider/api"
	"github.com/pginbox/pginbox/internal/provider/github"
	"github.com/pginbox/pginbox/internal/provider/linear"
	"github.com/pginbox/pginbox/internal/provider/paddle"
	"github.com/pginbox/pginbox/internal/provider/shopify"
	"github.com/pginbox/pginbox/internal/provider/sig"
	"github.com/pginbox/pginbox/internal/provider/slack"
	"github.com/pginbox/pginbox/internal/provider/square"
	"github.com/pginbox/pginbox/internal/provider/standardwebhooks"
	"github.com/pginbox/pginbox/internal/provider/stripe"
	"github.com/pginbox/pginbox/internal/provider/sume"
)

// Kind is one provider kind and what the runner builds for a provider of it.
type Kind struct {
	// Name is the kind as PGINBOX_PROVIDERS, webhooks.set_provider and the
	// table webhooks.provider_kinds spell it, e.g. "stripe".
	Name string
	// NewVerifier builds the kind's signature verifier from a provider's
	// secrets, once runner/verify.New has checked them.
	NewVerifier func(secrets []string) (sig.Provider, error)
	// NewURLVerifier, when set, builds the verifier of a kind whose scheme
	// signs the URL the provider posts to (square) from that URL
	// (PGINBOX_URL_<NAME>) and the secrets; NewVerifier then refuses, having
	// no URL. Nil: the kind signs no URL.
	NewURLVerifier func(url string, secrets []string) (sig.Provider, error)
	// DecodesSecrets reports that the kind decodes each secret into its key
	// and checks the key's length itself (standardwebhooks), so the raw
	// secret's length is not checked.
	DecodesSecrets bool
	// SecretHint, when set, says what is most likely wrong with a secret
	// the kind accepts but that is probably not what the user meant (a
	// Stripe API key pasted for the endpoint's signing secret), or "" when
	// nothing is; pginbox serve warns with it at start. It never quotes the
	// secret.
	SecretHint func(secret string) string
	// NewStatusAPI, when set, builds the client of the kind's per-id status
	// API, asked about each gap (sume). Nil: the kind has none.
	NewStatusAPI func(e Endpoint) (api.StatusAPI, error)
	// NewEventLog, when set, builds the client of the kind's event log, read
	// from a checkpoint (stripe, github). Nil: the kind has none.
	NewEventLog func(e Endpoint) (api.EventLog, error)
}

// Endpoint is how one configured provider's API is reached.
type Endpoint struct {
	// Provider is the provider's name, as in PGINBOX_PROVIDERS.
	Provider string
	// URL is PGINBOX_API_URL_<NAME>: only its origin is ever contacted.
	URL string
	// Key is PGINBOX_API_KEY_<NAME>.
	Key string
	// AppID is PGINBOX_GITHUB_APP_ID_<NAME>, read by kinds that need one (github).
	AppID string
}

// HasBackfill reports whether backfill can read the kind's API (a status
// API or an event log).
func (k Kind) HasBackfill() bool { return k.NewStatusAPI != nil || k.NewEventLog != nil }

// kinds lists every provider kind, sorted by name. Adding a kind is one
// folder internal/provider/<kind> and one entry here (see
// docs/providers/README.md for the SQL and the rest).
var kinds = []Kind{
	{
		Name:        "github",
		NewVerifier: github.NewVerifier,
		NewEventLog: func(e Endpoint) (api.EventLog, error) {
			l, err := github.NewEventLog(e.Provider, e.URL, e.AppID, e.Key)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
	},
	{Name: "linear", NewVerifier: linear.NewVerifier},
	{
		Name:        "paddle",
		NewVerifier: paddle.NewVerifier,
		NewEventLog: func(e Endpoint) (api.EventLog, error) {
			l, err := paddle.NewEventLog(e.Provider, e.URL, e.Key)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
	},
	{Name: "shopify", NewVerifier: shopify.NewVerifier},
	{Name: "slack", NewVerifier: slack.NewVerifier},
	{Name: "square", NewVerifier: square.NewVerifier, NewURLVerifier: square.NewURLVerifier},
	{Name: "standardwebhooks", NewVerifier: standardwebhooks.NewVerifier, DecodesSecrets: true},
	{
		Name:        "stripe",
		NewVerifier: stripe.NewVerifier,
		SecretHint:  stripe.SecretHint,
		NewEventLog: func(e Endpoint) (api.EventLog, error) {
			l, err := stripe.NewEventLog(e.Provider, e.URL, e.Key)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
	},
	{
		Name:        "sume",
		NewVerifier: sume.NewVerifier,
		NewStatusAPI: func(e Endpoint) (api.StatusAPI, error) {
			api, err := sume.NewStatusAPI(e.Provider, e.URL, e.Key)
			if err != nil {
				return nil, err
			}
			return api, nil
		},
	},
}

// Kinds returns every provider kind, sorted by name.
func Kinds() []Kind { return slices.Clone(kinds) }

// Names returns the names of every provider kind, sorted.
func Names() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return names
}

// Lookup returns the kind named name; false when there is none (names are
// case-sensitive).
func Lookup(name string) (Kind, bool) {
	i := slices.IndexFunc(kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return kinds[i], true
}
