package envconfig

import (
	"maps"
	"slices"
)

// APISetting is one of a provider's backfill API settings.
type APISetting int

const (
	// APIURL is the provider API's base URL: PGINBOX_API_URL_<NAME>.
	APIURL APISetting = iota
	// APIKey is what backfill authenticates with: PGINBOX_API_KEY_<NAME>.
	APIKey
)

// Var returns the variable that sets s for provider:
// PGINBOX_API_URL_<NAME> or PGINBOX_API_KEY_<NAME>.
func (s APISetting) Var(provider string) string {
	family := "PGINBOX_API_URL_<NAME>"
	if s == APIKey {
		family = "PGINBOX_API_KEY_<NAME>"
	}
	row, _ := Lookup(family)
	return row.Var(provider)
}

// ProviderError is a provider's backfill API setting that backfill cannot
// use. Backfill says what is wrong with the value (Msg); which variable set
// it is configuration's to say: Error names it, and [ProviderError.Env]
// gives the *Error a command prints. A program that configured the runner
// in Go reads Provider and Setting instead.
type ProviderError struct {
	// Provider is the provider's name (PGINBOX_PROVIDERS).
	Provider string
	// Setting is the setting at fault.
	Setting APISetting
	// Msg says what is wrong; it never repeats the value.
	Msg string
}

// Error returns "<variable>: <what is wrong>".
func (e *ProviderError) Error() string { return e.Env().Error() }

// Env returns e as an error about the variable that sets the setting.
func (e *ProviderError) Env() *Error { return &Error{Var: e.Setting.Var(e.Provider), Msg: e.Msg} }

// APIWarnings returns a warning for each provider (sorted by name) whose
// backfill API settings, as endpoint returns them, are valid but most
// likely not what was meant: a key without a URL, which is ignored (the
// provider's API is never contacted). None repeats a value.
func APIWarnings(providers []string, endpoint func(provider string) (url, key string)) []string {
	var w []string
	for _, name := range slices.Sorted(slices.Values(providers)) {
		url, key := endpoint(name)
		if url == "" && key != "" {
			w = append(w, "backfill: "+APIKey.Var(name)+" is set but "+APIURL.Var(name)+
				" is not: the key is ignored and the provider's API is never contacted")
		}
	}
	return w
}

// APIWarnings returns [APIWarnings] for the listed providers.
func (v Values) APIWarnings() []string {
	return APIWarnings(slices.Collect(maps.Keys(v.Kinds())), v.Endpoint)
}
