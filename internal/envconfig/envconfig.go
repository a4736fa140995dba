// Package envconfig reads pginbox's environment: DATABASE_URL and every
// PGINBOX_* variable are parsed here and nowhere else. runner.ConfigFromEnv
// turns the result into a runner.Config (building the verifiers and the
// handler); the CLI's other commands use the parts they need.
//
// Read checks the form of each value (a duration, a number, a name=kind list)
// but leaves to the runner what only serving needs, such as a provider's
// secrets being present: `pginbox gaps --backfill` lists providers without
// them.
package envconfig

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/retention"
)

// Error is an invalid setting; its message names the variable.
type Error struct {
	Var string
	Msg string
}

// Error returns "<variable>: <what is wrong>".
func (e *Error) Error() string { return e.Var + ": " + e.Msg }

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

// Settings is the environment, parsed. A zero value means the variable was
// unset: the runner's default applies.
type Settings struct {
	DatabaseURL string     // DATABASE_URL
	DataDir     string     // PGINBOX_DATA_DIR, default .pginbox
	LogLevel    slog.Level // PGINBOX_LOG_LEVEL, default info

	Addr      string     // PGINBOX_ADDR
	Providers []Provider // PGINBOX_PROVIDERS, in the order listed
	Handler   string     // PGINBOX_HANDLER
	LeaseMode string     // PGINBOX_LEASE_MODE: row-lock (default) or two-phase
	// HTTPTimeout bounds one call of an http: handler (PGINBOX_HTTP_TIMEOUT), default 30s.
	HTTPTimeout time.Duration

	Workers   int   // PGINBOX_WORKERS
	BatchSize int   // PGINBOX_BATCH
	MaxBody   int64 // PGINBOX_MAX_BODY

	// The durations of PGINBOX_LEASE, PGINBOX_RECONCILE_EVERY, PGINBOX_CHECKS_EVERY,
	// PGINBOX_POLL_INTERVAL, PGINBOX_NOTIFY_INTERVAL, PGINBOX_LISTEN_PING,
	// PGINBOX_SHUTDOWN_TIMEOUT, PGINBOX_HANDLER_TIMEOUT, PGINBOX_KEEP_PAYLOAD,
	// PGINBOX_KEEP_KEYS, PGINBOX_PRUNE_EVERY and PGINBOX_INGEST_TIMEOUT; a
	// schedule set to "off" is negative.
	Lease, ReconcileEvery, ChecksEvery, PollInterval, NotifyInterval, ListenPing time.Duration
	ShutdownTimeout, HandlerTimeout, KeepPayload, KeepKeys, PruneEvery           time.Duration
	IngestTimeout                                                                time.Duration

	// BackfillTimeout bounds one backfill pass (PGINBOX_BACKFILL_TIMEOUT), default 2m.
	BackfillTimeout time.Duration
	// BackfillLookback is how far back the first event-log pass of a provider
	// reads (PGINBOX_BACKFILL_LOOKBACK), default 72h.
	BackfillLookback time.Duration

	PollOnly    bool // PGINBOX_LISTEN=false
	SkipMigrate bool // PGINBOX_MIGRATE=false
	// DirectURL is a direct (session) connection for LISTEN and migrations:
	// PGINBOX_DIRECT_URL, else its old name PGINBOX_LISTEN_URL.
	DirectURL  string
	AdminToken string // PGINBOX_ADMIN_TOKEN
	// AdminAddr is the operators' listener (PGINBOX_ADMIN_ADDR): empty means
	// the default 127.0.0.1:8081, "off" disables it.
	AdminAddr string
	// AdminHosts are the extra Host names the admin listener answers
	// (PGINBOX_ADMIN_HOSTS, comma-separated), besides its listen host and loopback.
	AdminHosts []string

	// Endpoint returns a provider's backfill API: PGINBOX_API_URL_<NAME> and
	// PGINBOX_API_KEY_<NAME>. It reads them when asked, so that backfill can
	// serve providers PGINBOX_PROVIDERS does not list.
	Endpoint func(provider string) (url, key string)
	// AppID returns a provider's PGINBOX_GITHUB_APP_ID_<NAME> (kind github:
	// the GitHub App whose delivery log backfill reads), read when asked.
	AppID func(provider string) string
}

// Kinds returns the providers' kinds by name.
func (s Settings) Kinds() map[string]string {
	kinds := make(map[string]string, len(s.Providers))
	for _, p := range s.Providers {
		kinds[p.Name] = p.Kind
	}
	return kinds
}

// Name returns the environment suffix for a provider name: upper-cased,
// '-' → '_' (PGINBOX_SECRET_<NAME>, PGINBOX_API_URL_<NAME>).
func Name(provider string) string {
	return strings.ToUpper(strings.ReplaceAll(provider, "-", "_"))
}

// Endpoints returns the Endpoint function of Settings for getenv.
func Endpoints(getenv func(string) string) func(provider string) (url, key string) {
	return func(provider string) (string, string) {
		return getenv("PGINBOX_API_URL_" + Name(provider)), getenv("PGINBOX_API_KEY_" + Name(provider))
	}
}

// Read parses the environment getenv returns (os.Getenv, or the CLI's
// flags over it). Invalid values are *Error naming the variable.
func Read(getenv func(string) string) (Settings, error) {
	s := Settings{
		DatabaseURL: getenv("DATABASE_URL"),
		DataDir:     getenv("PGINBOX_DATA_DIR"),
		Addr:        getenv("PGINBOX_ADDR"),
		Handler:     getenv("PGINBOX_HANDLER"),
		DirectURL:   getenv("PGINBOX_DIRECT_URL"),
		LeaseMode:   getenv("PGINBOX_LEASE_MODE"),
		AdminToken:  getenv("PGINBOX_ADMIN_TOKEN"),
		AdminAddr:   strings.TrimSpace(getenv("PGINBOX_ADMIN_ADDR")),
		HTTPTimeout: 30 * time.Second,
		Endpoint:    Endpoints(getenv),
		AppID:       func(provider string) string { return getenv("PGINBOX_GITHUB_APP_ID_" + Name(provider)) },
	}
	if s.DataDir == "" {
		s.DataDir = ".pginbox"
	}
	if s.DirectURL == "" {
		s.DirectURL = getenv("PGINBOX_LISTEN_URL") // the old name
	}
	if s.LeaseMode != "" && s.LeaseMode != "row-lock" && s.LeaseMode != "two-phase" {
		return s, &Error{"PGINBOX_LEASE_MODE", fmt.Sprintf("%q is not row-lock or two-phase", s.LeaseMode)}
	}
	if v := getenv("PGINBOX_LOG_LEVEL"); v != "" {
		if err := s.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return s, &Error{"PGINBOX_LOG_LEVEL", fmt.Sprintf("%q is not debug, info, warn or error", v)}
		}
	}
	if s.Addr != "" {
		if _, _, err := net.SplitHostPort(s.Addr); err != nil {
			return s, &Error{"PGINBOX_ADDR", fmt.Sprintf("%q is not host:port", s.Addr)}
		}
	}
	if s.AdminAddr != "" && s.AdminAddr != "off" {
		if _, _, err := net.SplitHostPort(s.AdminAddr); err != nil {
			return s, &Error{"PGINBOX_ADMIN_ADDR", fmt.Sprintf("%q is not host:port or off", s.AdminAddr)}
		}
	}
	for _, h := range strings.Split(getenv("PGINBOX_ADMIN_HOSTS"), ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			if strings.ContainsAny(h, "/ @") {
				return s, &Error{"PGINBOX_ADMIN_HOSTS", fmt.Sprintf("%q is not a host name", h)}
			}
			s.AdminHosts = append(s.AdminHosts, h)
		}
	}
	if t := s.AdminToken; t != "" && len(t) < 16 {
		return s, &Error{"PGINBOX_ADMIN_TOKEN", "is shorter than 16 characters: use a long random token (openssl rand -hex 32)"}
	}
	var err error
	if s.Providers, err = readProviders(getenv); err != nil {
		return s, err
	}
	if err := s.readDurations(getenv); err != nil {
		return s, err
	}
	if err := s.readNumbers(getenv); err != nil {
		return s, err
	}
	bools := []struct {
		name string
		dst  *bool
	}{{"PGINBOX_LISTEN", &s.PollOnly}, {"PGINBOX_MIGRATE", &s.SkipMigrate}}
	for _, b := range bools {
		if v := getenv(b.name); v != "" {
			x, err := strconv.ParseBool(v)
			if err != nil {
				return s, &Error{b.name, fmt.Sprintf("%q is not true or false", v)}
			}
			*b.dst = !x
		}
	}
	if v := getenv("PGINBOX_HTTP_TIMEOUT"); v != "" {
		x, err := time.ParseDuration(v)
		if err != nil || x <= 0 {
			return s, &Error{"PGINBOX_HTTP_TIMEOUT", fmt.Sprintf("%q is not a positive duration", v)}
		}
		s.HTTPTimeout = x
	}
	return s, nil
}

// readDurations parses the PGINBOX_* durations; "off" disables a schedule
// (stored as a negative duration).
func (s *Settings) readDurations(getenv func(string) string) error {
	durations := []struct {
		name string
		dst  *time.Duration
		neg  bool // negative allowed (disables)
	}{
		{"PGINBOX_LEASE", &s.Lease, false},
		{"PGINBOX_RECONCILE_EVERY", &s.ReconcileEvery, true},
		{"PGINBOX_CHECKS_EVERY", &s.ChecksEvery, true},
		{"PGINBOX_POLL_INTERVAL", &s.PollInterval, false},
		{"PGINBOX_NOTIFY_INTERVAL", &s.NotifyInterval, false},
		{"PGINBOX_LISTEN_PING", &s.ListenPing, true},
		{"PGINBOX_SHUTDOWN_TIMEOUT", &s.ShutdownTimeout, false},
		{"PGINBOX_HANDLER_TIMEOUT", &s.HandlerTimeout, false},
		{"PGINBOX_KEEP_PAYLOAD", &s.KeepPayload, false},
		{"PGINBOX_KEEP_KEYS", &s.KeepKeys, false},
		{"PGINBOX_PRUNE_EVERY", &s.PruneEvery, true},
		{"PGINBOX_INGEST_TIMEOUT", &s.IngestTimeout, false},
		{"PGINBOX_BACKFILL_TIMEOUT", &s.BackfillTimeout, false},
		{"PGINBOX_BACKFILL_LOOKBACK", &s.BackfillLookback, false},
	}
	for _, d := range durations {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		if v == "off" && d.neg {
			*d.dst = -1
			continue
		}
		x, err := ParseDuration(v)
		if err != nil || x == 0 || (x < 0 && !d.neg) {
			return &Error{d.name, fmt.Sprintf("%q is not a positive duration like 30s, 5m or 30d", v)}
		}
		*d.dst = x
	}
	payload, keys := orDefault(s.KeepPayload, retention.DefaultKeepPayload), orDefault(s.KeepKeys, retention.DefaultKeepKeys)
	if keys <= payload {
		return &Error{"PGINBOX_KEEP_KEYS", "must be longer than PGINBOX_KEEP_PAYLOAD, so late redeliveries still dedupe"}
	}
	return nil
}

// orDefault returns v, or def when v is zero.
func orDefault(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// readNumbers parses PGINBOX_WORKERS, PGINBOX_BATCH and PGINBOX_MAX_BODY.
func (s *Settings) readNumbers(getenv func(string) string) error {
	ints := []struct {
		name     string
		dst      *int
		min, max int
	}{
		{"PGINBOX_WORKERS", &s.Workers, 1, 1024},
		{"PGINBOX_BATCH", &s.BatchSize, 1, 10000},
	}
	for _, n := range ints {
		v := getenv(n.name)
		if v == "" {
			continue
		}
		x, err := strconv.Atoi(v)
		if err != nil || x < n.min || x > n.max {
			return &Error{n.name, fmt.Sprintf("%q is not a whole number from %d to %d", v, n.min, n.max)}
		}
		*n.dst = x
	}
	if v := getenv("PGINBOX_MAX_BODY"); v != "" {
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil || x < 1 {
			return &Error{"PGINBOX_MAX_BODY", fmt.Sprintf("%q is not a positive number of bytes", v)}
		}
		s.MaxBody = x
	}
	return nil
}

// readProviders parses PGINBOX_PROVIDERS ("sume=sume,gh=github") and each
// provider's PGINBOX_SECRET_<NAME>.
func readProviders(getenv func(string) string) ([]Provider, error) {
	list := strings.TrimSpace(getenv("PGINBOX_PROVIDERS"))
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
			return nil, &Error{"PGINBOX_PROVIDERS", fmt.Sprintf("%q is not name=kind with a name of a-z, 0-9, - and _", item)}
		}
		if seen[name] {
			return nil, &Error{"PGINBOX_PROVIDERS", fmt.Sprintf("provider %q listed twice", name)}
		}
		seen[name] = true
		p := Provider{Name: name, Kind: kind, SecretVar: "PGINBOX_SECRET_" + Name(name)}
		if other, ok := byVar[p.SecretVar]; ok {
			return nil, &Error{"PGINBOX_PROVIDERS", fmt.Sprintf(
				"providers %q and %q would share %s (and PGINBOX_API_URL_%s, PGINBOX_API_KEY_%s): rename one",
				other, name, p.SecretVar, Name(name), Name(name))}
		}
		byVar[p.SecretVar] = name
		for _, s := range strings.Split(getenv(p.SecretVar), ",") {
			if s = strings.TrimSpace(s); s != "" {
				p.Secrets = append(p.Secrets, s)
			}
		}
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

// ParseDuration is time.ParseDuration plus a "d" (24h) unit: "30d", "1d12h".
func ParseDuration(s string) (time.Duration, error) {
	if i := strings.IndexByte(s, 'd'); i > 0 {
		days, err := strconv.Atoi(s[:i])
		if err != nil {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		rest := time.Duration(0)
		if s[i+1:] != "" {
			if rest, err = time.ParseDuration(s[i+1:]); err != nil {
				return 0, err
			}
		}
		return time.Duration(days)*24*time.Hour + rest, nil
	}
	return time.ParseDuration(s)
}
