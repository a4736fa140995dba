// Package envconfig is pginbox's settings table ([Table]) and its
// environment reader: DATABASE_URL and every PGINBOX_* variable are declared
// and parsed here and nowhere else. runner.ConfigFromEnv reads the rows that
// set a runner.Config (building the verifiers, the handler and the
// backfill APIs); the CLI reads the rest and builds the `serve` flags.
//
// Read checks each value (its form, its range) but leaves to the runner what
// only serving needs, such as a provider's secrets being present: `pginbox
// gaps --backfill` lists providers without them.
package envconfig

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Error is an invalid setting; its message names the variable.
type Error struct {
	Var string
	Msg string
}

// Error returns "<variable>: <what is wrong>".
func (e *Error) Error() string { return e.Var + ": " + e.Msg }

// Setting is one row of [Table]: a variable, the flag that mirrors it, the
// runner.Config field it sets, its default, its rule and what it means.
type Setting struct {
	// Env is the variable: PGINBOX_WORKERS; a per-provider family ends in
	// <NAME> (PGINBOX_SECRET_<NAME>). Empty: a Config field only a Go
	// program sets.
	Env string
	// Flag is the `pginbox serve` flag that overrides Env; empty: none.
	Flag string
	// Field is the runner.Config field the value is copied to.
	Field string
	// Builds is the runner.Config field ConfigFromEnv builds from the value
	// (Providers, Handler, ProviderAPIs) when it is not copied as it is.
	Builds string
	// Default is the value when the variable is unset (and a Config field is
	// zero), in the variable's syntax; empty: none.
	Default string
	// Doc says in one line what the setting means.
	Doc string
	// OldNameOf is the variable this is the old name of: it is read when
	// that one is unset.
	OldNameOf string
	// LongerThan is a variable this duration must be longer than, for the
	// reason why.
	LongerThan, why string

	kind kind
}

// Family reports whether s is a per-provider family (PGINBOX_SECRET_<NAME>).
func (s Setting) Family() bool { return strings.HasSuffix(s.Env, "<NAME>") }

// Var returns the variable of s for provider: PGINBOX_SECRET_<NAME> → PGINBOX_SECRET_MY_SUME.
func (s Setting) Var(provider string) string {
	return strings.TrimSuffix(s.Env, "<NAME>") + Name(provider)
}

// Lookup returns the row of variable env (a family as PGINBOX_SECRET_<NAME>).
func Lookup(env string) (Setting, bool) {
	for _, s := range Table {
		if s.Env == env {
			return s, true
		}
	}
	return Setting{}, false
}

// Name returns the environment suffix for a provider name: upper-cased,
// '-' → '_' (PGINBOX_SECRET_<NAME>, PGINBOX_API_URL_<NAME>).
func Name(provider string) string {
	return strings.ToUpper(strings.ReplaceAll(provider, "-", "_"))
}

// Provider is one entry of PGINBOX_PROVIDERS with its secrets.
type Provider struct {
	// Name is the {provider} of POST /webhooks/{provider}.
	Name string
	// Kind is the signature scheme, unchecked here (sume, stripe, ...).
	Kind string
	// SecretVar is the variable the secrets came from, PGINBOX_SECRET_<NAME>.
	SecretVar string
	// Secrets are the comma-separated, trimmed, non-empty secrets.
	Secrets []string
}

// Values is the environment as [Read] found it: each variable of the rows
// read, parsed and checked, with the defaults of those unset.
type Values struct {
	value map[string]any    // by variable: what was set, else the default
	set   map[string]bool   // the variables set
	each  map[string]string // the families' variables of the listed providers
	// Providers are PGINBOX_PROVIDERS in the order listed, with their secrets.
	Providers []Provider
}

// Read reads and checks the variables of rows from getenv (os.Getenv, or
// the CLI's flags over it), each once: a family for each provider
// PGINBOX_PROVIDERS lists. An invalid value is an *Error naming the variable.
func Read(getenv func(string) string, rows []Setting) (Values, error) {
	v := Values{value: map[string]any{}, set: map[string]bool{}, each: map[string]string{}}
	for _, s := range rows {
		if s.Env == "" || s.Family() {
			continue
		}
		raw := getenv(s.Env)
		if raw == "" {
			if s.Default != "" {
				v.value[s.Env], _ = s.kind.parse(s.Default)
			}
			continue
		}
		x, msg := s.kind.read(raw)
		if msg != "" {
			return v, &Error{s.Env, msg}
		}
		name := s.Env
		if s.OldNameOf != "" {
			if v.set[s.OldNameOf] {
				continue // the new name wins (its row comes first)
			}
			name = s.OldNameOf
		}
		v.value[name], v.set[name] = x, true
	}
	for _, s := range rows {
		if s.LongerThan == "" {
			continue
		}
		long, _ := v.value[s.Env].(time.Duration)
		short, _ := v.value[s.LongerThan].(time.Duration)
		if long <= short {
			return v, &Error{s.Env, "must be longer than " + s.LongerThan + ", " + s.why}
		}
	}
	v.Providers, _ = v.value["PGINBOX_PROVIDERS"].([]Provider)
	for i, p := range v.Providers {
		for _, s := range rows {
			if !s.Family() {
				continue
			}
			if raw := getenv(s.Var(p.Name)); raw != "" {
				v.each[s.Var(p.Name)] = raw
			}
		}
		for _, secret := range strings.Split(v.each[p.SecretVar], ",") {
			if secret = strings.TrimSpace(secret); secret != "" {
				v.Providers[i].Secrets = append(v.Providers[i].Secrets, secret)
			}
		}
	}
	return v, nil
}

// Get returns the value of variable env: what was set, else its default,
// else nil. The value of an old name is under the new one.
func (v Values) Get(env string) any { return v.value[env] }

// IsSet reports whether variable env was set (or its old name).
func (v Values) IsSet(env string) bool { return v.set[env] }

// String returns the text of variable env, or its default.
func (v Values) String(env string) string { s, _ := v.value[env].(string); return s }

// Duration returns the duration of variable env, or its default.
func (v Values) Duration(env string) time.Duration { d, _ := v.value[env].(time.Duration); return d }

// LogLevel returns PGINBOX_LOG_LEVEL.
func (v Values) LogLevel() slog.Level { l, _ := v.value["PGINBOX_LOG_LEVEL"].(slog.Level); return l }

// Kinds returns the providers' kinds by name.
func (v Values) Kinds() map[string]string {
	kinds := make(map[string]string, len(v.Providers))
	for _, p := range v.Providers {
		kinds[p.Name] = p.Kind
	}
	return kinds
}

// Each returns the value of a family's variable for provider (a listed one):
// Each("PGINBOX_API_URL_<NAME>", "sume").
func (v Values) Each(family, provider string) string {
	return v.each[strings.TrimSuffix(family, "<NAME>")+Name(provider)]
}

// Endpoint returns a listed provider's backfill API: PGINBOX_API_URL_<NAME>
// and PGINBOX_API_KEY_<NAME>.
func (v Values) Endpoint(provider string) (url, key string) {
	return v.Each("PGINBOX_API_URL_<NAME>", provider), v.Each("PGINBOX_API_KEY_<NAME>", provider)
}

// AppID returns a listed provider's PGINBOX_GITHUB_APP_ID_<NAME>.
func (v Values) AppID(provider string) string {
	return v.Each("PGINBOX_GITHUB_APP_ID_<NAME>", provider)
}

// parseProviders parses PGINBOX_PROVIDERS ("sume=sume,gh=github"); the
// secrets are read afterwards.
func parseProviders(list string) ([]Provider, error) {
	list = strings.TrimSpace(list)
	if list == "" {
		return nil, nil
	}
	var providers []Provider
	seen := map[string]bool{}
	byVar := map[string]string{} // PGINBOX_SECRET_<NAME> → the provider it belongs to
	for _, item := range strings.Split(list, ",") {
		name, kind, ok := strings.Cut(strings.TrimSpace(item), "=")
		name, kind = strings.TrimSpace(name), strings.TrimSpace(kind)
		if !ok || !validName(name) {
			return nil, fmt.Errorf("%q is not name=kind with a name of a-z, 0-9, - and _", item)
		}
		if seen[name] {
			return nil, fmt.Errorf("provider %q listed twice", name)
		}
		seen[name] = true
		p := Provider{Name: name, Kind: kind, SecretVar: "PGINBOX_SECRET_" + Name(name)}
		if other, ok := byVar[p.SecretVar]; ok {
			return nil, fmt.Errorf("providers %q and %q would share %s (and PGINBOX_API_URL_%s, PGINBOX_API_KEY_%s): rename one",
				other, name, p.SecretVar, Name(name), Name(name))
		}
		byVar[p.SecretVar] = name
		providers = append(providers, p)
	}
	return providers, nil
}

// validName reports whether s is a provider name: 1 to 64 of a-z, 0-9, - and _.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// DatabaseURL returns DATABASE_URL.
func (v Values) DatabaseURL() string { return v.String("DATABASE_URL") }

// DataDir returns PGINBOX_DATA_DIR.
func (v Values) DataDir() string { return v.String("PGINBOX_DATA_DIR") }

// Endpoints returns a provider's backfill API read from getenv when asked:
// PGINBOX_API_URL_<NAME> and PGINBOX_API_KEY_<NAME> (the form of
// [Values.Endpoint] for any provider, listed or not).
func Endpoints(getenv func(string) string) func(provider string) (url, key string) {
	apiURL, _ := Lookup("PGINBOX_API_URL_<NAME>")
	apiKey, _ := Lookup("PGINBOX_API_KEY_<NAME>")
	return func(provider string) (string, string) {
		return getenv(apiURL.Var(provider)), getenv(apiKey.Var(provider))
	}
}
