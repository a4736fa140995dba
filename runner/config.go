package runner

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pginbox/pginbox/runner/verify"
)

// Config configures a [Server]. [ConfigFromEnv] fills it from the
// environment (contract §4); a Go program embedding pginbox can build it
// directly. Zero values mean the documented defaults (see [Config.withDefaults]).
type Config struct {
	// Addr is the HTTP listen address. Default 127.0.0.1:8080.
	Addr string
	// Providers maps a provider name (the {provider} in POST /webhooks/{provider})
	// to its verifier.
	Providers map[string]verify.Provider
	// ProviderKinds maps the same names to their kinds (sume, stripe, ...).
	ProviderKinds map[string]string
	// MaxBody is the largest accepted body in bytes. Default 1 MiB.
	MaxBody int64
	// Handler processes claimed events. Nil means "none": the runner only
	// ingests and other stacks claim with SQL.
	Handler Handler
	// Workers is the number of worker goroutines. Default 8.
	Workers int
	// BatchSize is how many events a worker claims at once. Default 100.
	BatchSize int
	// Lease is how long a claimed event stays locked. Default 5m.
	Lease time.Duration
	// PollInterval is the backstop: workers look for work at least this
	// often even without a wake-up. Default 1s.
	PollInterval time.Duration
	// NotifyInterval is the least time between two coalesced NOTIFYs on
	// webhooks_events. Default 50ms.
	NotifyInterval time.Duration
	// Listen enables LISTEN/NOTIFY wake-ups (default true via ConfigFromEnv);
	// without it, workers poll.
	Listen bool
	// ListenURL is the direct (not pooled) connection the listener uses.
	// Empty means the database URL.
	ListenURL string
	// ListenPing is how often the listener pings itself to detect a
	// half-open connection. Default 10s; negative disables.
	ListenPing time.Duration
	// ReconcileEvery schedules reconciliation passes. Default 1m; negative disables.
	ReconcileEvery time.Duration
	// ChecksEvery schedules view refreshes and anomaly checks. Default 1m; negative disables.
	ChecksEvery time.Duration
	// KeepPayload is how long payloads of processed events are kept.
	// Default 30 days.
	KeepPayload time.Duration
	// KeepKeys is how long finished events (their dedup keys) are kept; it
	// must be longer than KeepPayload. Default 400 days.
	KeepKeys time.Duration
	// PruneEvery schedules retention. Default 1h; negative disables.
	PruneEvery time.Duration
	// HandlerTimeout bounds one handler call; past it the lease is no longer
	// extended. Default 5m.
	HandlerTimeout time.Duration
	// SQLPerEvent runs a sql: handler event by event from Go instead of one
	// webhooks.process_batch() statement per batch (see Workers.SQLPerEvent).
	SQLPerEvent bool
	// ShutdownTimeout bounds a graceful shutdown. Default 30s.
	ShutdownTimeout time.Duration
	// IngestTimeout bounds one ingest call; past it the request answers 503.
	// Default 10s.
	IngestTimeout time.Duration
	// StatusAPIs are the providers' APIs the backfill asks after each
	// scheduled reconcile pass (see StatusAPIsFromEnv). Empty: no backfill.
	StatusAPIs map[string]StatusAPI
	// AdminToken enables the status page's write actions when set.
	AdminToken string
	// Migrate applies pending migrations at start. Default true via ConfigFromEnv.
	Migrate bool
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 1 << 20
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	def(&c.Lease, 5*time.Minute)
	def(&c.PollInterval, time.Second)
	def(&c.NotifyInterval, 50*time.Millisecond)
	def(&c.ReconcileEvery, time.Minute)
	def(&c.ChecksEvery, time.Minute)
	def(&c.ShutdownTimeout, 30*time.Second)
	def(&c.HandlerTimeout, 5*time.Minute)
	def(&c.KeepPayload, 30*24*time.Hour)
	def(&c.KeepKeys, 400*24*time.Hour)
	def(&c.PruneEvery, time.Hour)
	def(&c.IngestTimeout, 10*time.Second)
	if c.Providers == nil {
		c.Providers = map[string]verify.Provider{}
	}
	return c
}

// ConfigError is an invalid setting; its message names the variable.
type ConfigError struct {
	Var string
	Msg string
}

func (e *ConfigError) Error() string { return e.Var + ": " + e.Msg }

// EnvName returns the environment suffix for a provider name: upper-cased,
// '-' → '_' (PGINBOX_SECRET_<NAME>, PGINBOX_API_URL_<NAME>).
func EnvName(provider string) string {
	return strings.ToUpper(strings.ReplaceAll(provider, "-", "_"))
}

// ConfigFromEnv reads the contract's environment variables. Invalid values
// (an unknown provider kind, a provider without secrets, a bad duration or
// number) are errors that name the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{Listen: true, Migrate: true}
	c.Addr = getenv("PGINBOX_ADDR")
	if c.Addr != "" {
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			return c, &ConfigError{"PGINBOX_ADDR", fmt.Sprintf("%q is not host:port", c.Addr)}
		}
	}
	var err error
	if c.Providers, c.ProviderKinds, err = providersFromEnv(getenv); err != nil {
		return c, err
	}
	durations := []struct {
		name string
		dst  *time.Duration
		neg  bool // negative allowed (disables)
	}{
		{"PGINBOX_LEASE", &c.Lease, false},
		{"PGINBOX_RECONCILE_EVERY", &c.ReconcileEvery, true},
		{"PGINBOX_CHECKS_EVERY", &c.ChecksEvery, true},
		{"PGINBOX_POLL_INTERVAL", &c.PollInterval, false},
		{"PGINBOX_NOTIFY_INTERVAL", &c.NotifyInterval, false},
		{"PGINBOX_LISTEN_PING", &c.ListenPing, true},
		{"PGINBOX_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout, false},
		{"PGINBOX_HANDLER_TIMEOUT", &c.HandlerTimeout, false},
		{"PGINBOX_KEEP_PAYLOAD", &c.KeepPayload, false},
		{"PGINBOX_KEEP_KEYS", &c.KeepKeys, false},
		{"PGINBOX_PRUNE_EVERY", &c.PruneEvery, true},
		{"PGINBOX_INGEST_TIMEOUT", &c.IngestTimeout, false},
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
			return c, &ConfigError{d.name, fmt.Sprintf("%q is not a positive duration like 30s, 5m or 30d", v)}
		}
		*d.dst = x
	}
	if eff := c.withDefaults(); eff.KeepKeys <= eff.KeepPayload {
		return c, &ConfigError{"PGINBOX_KEEP_KEYS", "must be longer than PGINBOX_KEEP_PAYLOAD, so late redeliveries still dedupe"}
	}
	ints := []struct {
		name     string
		dst      *int
		min, max int
	}{
		{"PGINBOX_WORKERS", &c.Workers, 1, 1024},
		{"PGINBOX_BATCH", &c.BatchSize, 1, 10000},
	}
	for _, n := range ints {
		v := getenv(n.name)
		if v == "" {
			continue
		}
		x, err := strconv.Atoi(v)
		if err != nil || x < n.min || x > n.max {
			return c, &ConfigError{n.name, fmt.Sprintf("%q is not a whole number from %d to %d", v, n.min, n.max)}
		}
		*n.dst = x
	}
	if v := getenv("PGINBOX_MAX_BODY"); v != "" {
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil || x < 1 {
			return c, &ConfigError{"PGINBOX_MAX_BODY", fmt.Sprintf("%q is not a positive number of bytes", v)}
		}
		c.MaxBody = x
	}
	bools := []struct {
		name string
		dst  *bool
	}{{"PGINBOX_LISTEN", &c.Listen}, {"PGINBOX_MIGRATE", &c.Migrate}}
	for _, b := range bools {
		if v := getenv(b.name); v != "" {
			x, err := strconv.ParseBool(v)
			if err != nil {
				return c, &ConfigError{b.name, fmt.Sprintf("%q is not true or false", v)}
			}
			*b.dst = x
		}
	}
	httpTimeout := 30 * time.Second
	if v := getenv("PGINBOX_HTTP_TIMEOUT"); v != "" {
		x, err := time.ParseDuration(v)
		if err != nil || x <= 0 {
			return c, &ConfigError{"PGINBOX_HTTP_TIMEOUT", fmt.Sprintf("%q is not a positive duration", v)}
		}
		httpTimeout = x
	}
	if c.Handler, err = ParseHandler(getenv("PGINBOX_HANDLER"), httpTimeout); err != nil {
		return c, &ConfigError{"PGINBOX_HANDLER", err.Error()}
	}
	if c.StatusAPIs, err = StatusAPIsFromEnv(getenv, c.ProviderKinds, nil); err != nil {
		return c, err
	}
	c.ListenURL = getenv("PGINBOX_LISTEN_URL")
	c.AdminToken = getenv("PGINBOX_ADMIN_TOKEN")
	return c, nil
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

var providerName = func(s string) bool {
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

// providersFromEnv parses PGINBOX_PROVIDERS ("sume=sume,gh=github") and
// each provider's PGINBOX_SECRET_<NAME>.
func providersFromEnv(getenv func(string) string) (map[string]verify.Provider, map[string]string, error) {
	providers, kinds := map[string]verify.Provider{}, map[string]string{}
	list := strings.TrimSpace(getenv("PGINBOX_PROVIDERS"))
	if list == "" {
		return providers, kinds, nil
	}
	for _, item := range strings.Split(list, ",") {
		name, kind, ok := strings.Cut(strings.TrimSpace(item), "=")
		name, kind = strings.TrimSpace(name), strings.TrimSpace(kind)
		if !ok || !providerName(name) {
			return nil, nil, &ConfigError{"PGINBOX_PROVIDERS", fmt.Sprintf("%q is not name=kind with a name of a-z, 0-9, - and _", item)}
		}
		if _, dup := providers[name]; dup {
			return nil, nil, &ConfigError{"PGINBOX_PROVIDERS", fmt.Sprintf("provider %q listed twice", name)}
		}
		secretVar := "PGINBOX_SECRET_" + EnvName(name)
		var secrets []string
		for _, s := range strings.Split(getenv(secretVar), ",") {
			if s = strings.TrimSpace(s); s != "" {
				secrets = append(secrets, s)
			}
		}
		if !contains(verify.Kinds(), kind) {
			return nil, nil, &ConfigError{"PGINBOX_PROVIDERS", fmt.Sprintf("provider %q: unknown kind %q (supported: %s)", name, kind, strings.Join(verify.Kinds(), ", "))}
		}
		if len(secrets) == 0 {
			return nil, nil, &ConfigError{secretVar, fmt.Sprintf("provider %q has no secret", name)}
		}
		p, err := verify.New(kind, secrets)
		if err != nil {
			return nil, nil, &ConfigError{secretVar, err.Error()}
		}
		providers[name], kinds[name] = p, kind
	}
	return providers, kinds, nil
}

func contains(list []string, s string) bool {
	i := sort.SearchStrings(list, s)
	return i < len(list) && list[i] == s
}
