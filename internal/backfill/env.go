package backfill

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/pginbox/pginbox/internal/envconfig"
)

// APIs builds the status APIs a pass asks, from the configured providers
// (name → kind, as in PGINBOX_PROVIDERS) and endpoint, which returns a
// provider's PGINBOX_API_URL_<NAME> and PGINBOX_API_KEY_<NAME>
// ([envconfig.Settings.Endpoint]):
//
//   - a provider of kind sume gets a [SumeAPI] with its URL and key. Without
//     a URL it still looks up expectations that carry a status_url (the poll
//     fallback), and skips the others;
//   - a provider of another kind has no status API yet: it is mapped to nil
//     (its gaps are listed, never looked up), and setting
//     PGINBOX_API_URL_<NAME> for it is an error rather than a silent no-op;
//   - the entry [AnyProvider] serves providers that are not configured at all
//     (no webhook mode, no kind known): it treats them as Sume-style APIs,
//     asking endpoint for their URL and key when it first meets them, so an
//     expectation with a status_url is polled even when no webhook for its
//     provider is configured.
//
// client makes the requests; nil means http.DefaultClient (a pass bounds
// each request with Options.RequestTimeout).
func APIs(providers map[string]string, endpoint func(provider string) (url, key string), client *http.Client) (map[string]StatusAPI, error) {
	apis := map[string]StatusAPI{}
	for _, name := range slices.Sorted(maps.Keys(providers)) {
		kind := providers[name]
		base, key := endpoint(name)
		switch kind {
		case "sume":
			api, err := NewSumeAPI(name, base, key, client)
			if err != nil {
				return nil, &envconfig.Error{Var: urlVar(name), Msg: err.Error()}
			}
			apis[name] = api
		default:
			if base != "" {
				return nil, &envconfig.Error{Var: urlVar(name), Msg: fmt.Sprintf(
					"provider %q is of kind %q, which has no status API for backfill yet (supported: sume); unset it", name, kind)}
			}
			apis[name] = nil
		}
	}
	apis[AnyProvider] = &fallbackAPI{endpoint: endpoint, client: client, apis: map[string]StatusAPI{}}
	return apis, nil
}

// urlVar names a provider's PGINBOX_API_URL_<NAME> in errors.
func urlVar(provider string) string { return "PGINBOX_API_URL_" + envconfig.Name(provider) }

// fallbackAPI is the AnyProvider entry of APIs: a Sume-style API per
// provider, configured on first use.
type fallbackAPI struct {
	endpoint func(provider string) (url, key string)
	client   *http.Client

	mu   sync.Mutex
	apis map[string]StatusAPI
}

var _ StatusAPI = (*fallbackAPI)(nil)

// Lookup asks the provider's Sume-style API.
func (e *fallbackAPI) Lookup(ctx context.Context, gap Gap) (Lookup, error) {
	e.mu.Lock()
	api, ok := e.apis[gap.Provider]
	if !ok {
		base, key := e.endpoint(gap.Provider)
		s, err := NewSumeAPI(gap.Provider, base, key, e.client)
		if err != nil {
			api = badAPI{&envconfig.Error{Var: urlVar(gap.Provider), Msg: err.Error()}}
		} else {
			api = s
		}
		e.apis[gap.Provider] = api
	}
	e.mu.Unlock()
	return api.Lookup(ctx, gap)
}

// badAPI answers every lookup with a configuration error.
type badAPI struct{ err error }

// Lookup returns the configuration error.
func (b badAPI) Lookup(context.Context, Gap) (Lookup, error) { return Lookup{}, b.err }
