package backfill

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/provider"
	"github.com/pginbox/pginbox/internal/provider/api"
)

// APIs builds the provider APIs a pass asks, from the configured providers
// (name → kind, as in PGINBOX_PROVIDERS) and endpoint, which returns a
// provider's API URL and key ([envconfig.Values.Endpoint]):
//
//   - a provider whose kind has a status API (sume) and an API URL gets
//     that API's client ([provider.Kind].NewStatusAPI) on that URL with its key;
//   - a provider without an API URL is never contacted: its gaps are listed,
//     never looked up (a key without a URL is configuration's to warn
//     about: [envconfig.APIWarnings]);
//   - a provider whose kind has an event log (stripe, github) gets none here:
//     see [EventLogs];
//   - a provider of a kind backfill cannot read: an API URL for it is an
//     error rather than a silent no-op;
//   - a provider that PGINBOX_PROVIDERS does not list is never contacted,
//     whatever an expectation's status_url says.
//
// A setting it cannot use is an *[envconfig.ProviderError], which names the
// provider and the setting, and says what is wrong.
func APIs(providers map[string]string, endpoint func(provider string) (url, key string)) (map[string]StatusAPI, error) {
	apis := map[string]StatusAPI{}
	for _, name := range slices.Sorted(maps.Keys(providers)) {
		kind := providers[name]
		base, key := endpoint(name)
		if base == "" {
			continue
		}
		k, _ := provider.Lookup(kind)
		switch {
		case k.NewStatusAPI != nil:
			api, err := k.NewStatusAPI(provider.Endpoint{Provider: name, URL: base, Key: key})
			if err != nil {
				return nil, &envconfig.ProviderError{Provider: name, Setting: envconfig.APIURL, Msg: err.Error()}
			}
			apis[name] = api
		case k.NewEventLog != nil:
			// Event logs: see EventLogs.
		default:
			return nil, &envconfig.ProviderError{Provider: name, Setting: envconfig.APIURL, Msg: fmt.Sprintf(
				"provider %q is of kind %q, which has no API for backfill (supported: %s); unset it", name, kind, strings.Join(backfillKinds(), ", "))}
		}
	}
	return apis, nil
}

// EventLogs builds the event-log APIs a pass reads ([provider.Kind].NewEventLog):
// for each provider of kind stripe (its secret key in
// PGINBOX_API_KEY_<NAME>) or github (PGINBOX_GITHUB_APP_ID_<NAME> and the
// app's private key, PEM, base64-encoded PEM or a path to it, in PGINBOX_API_KEY_<NAME>) that has
// PGINBOX_API_URL_<NAME>. appID returns PGINBOX_GITHUB_APP_ID_<NAME>
// ([envconfig.Values.AppID]). Providers without a URL are never contacted.
func EventLogs(providers map[string]string, endpoint func(provider string) (url, key string), appID func(provider string) string) (map[string]EventLog, error) {
	logs := map[string]EventLog{}
	for _, name := range slices.Sorted(maps.Keys(providers)) {
		base, key := endpoint(name)
		if base == "" {
			continue
		}
		k, _ := provider.Lookup(providers[name])
		if k.NewEventLog == nil {
			continue
		}
		if _, err := api.ParseOrigin(strings.TrimSpace(base)); err != nil {
			return nil, &envconfig.ProviderError{Provider: name, Setting: envconfig.APIURL, Msg: "provider " + name + ": API URL: " + err.Error()}
		}
		l, err := k.NewEventLog(provider.Endpoint{Provider: name, URL: base, Key: key, AppID: appID(name)})
		if err != nil {
			return nil, &envconfig.ProviderError{Provider: name, Setting: envconfig.APIKey, Msg: err.Error()}
		}
		logs[name] = l
	}
	return logs, nil
}

// backfillKinds lists the kinds backfill can read an API of, sorted.
func backfillKinds() []string {
	var names []string
	for _, k := range provider.Kinds() {
		if k.HasBackfill() {
			names = append(names, k.Name)
		}
	}
	return names
}
