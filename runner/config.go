package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/backfill"
	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/runner/verify"
)

// Config configures a [Server]. [ConfigFromEnv] fills it from the
// environment; a Go program embedding pginbox can build it directly, or start
// from [DefaultConfig]. The zero value of every field means its default, as
// documented on the field; [Config.Validate] (which [New] calls) refuses a
// Config whose values are out of range. Each setting (its variable, flag,
// default and rule) is declared once, in the settings table of
// internal/envconfig.
type Config struct {
	// Addr is the HTTP listen address. Default 127.0.0.1:8080.
	Addr string
	// Providers maps a provider name (the {provider} in POST /webhooks/{provider})
	// to its verifier (see [verify.New]). Empty: every delivery answers 404.
	Providers map[string]verify.Provider
	// MaxBody is the largest accepted body in bytes. Default 1 MiB.
	MaxBody int64
	// Handler processes claimed events. Nil means "none": the runner only
	// ingests and other stacks claim with SQL.
	Handler Handler
	// Workers is the number of worker goroutines. Default 8.
	Workers int
	// BatchSize is how many events a worker claims at once. Default 100.
	BatchSize int
	// LeaseMode is how the events of a handler that runs inside the
	// database transaction (sql:, or a Go Handler) are held while it runs:
	// "row-lock" locks a batch FOR UPDATE SKIP LOCKED in the handlers' own
	// transaction and marks it processed before the same commit — one row
	// version per event, nothing to rescue when a worker dies; "two-phase"
	// claims a batch with a timed lease first (claim(), heartbeats,
	// complete()), for handlers that run long enough that holding row locks
	// that long is unwelcome. Empty (the default) is row-lock for sql:
	// handlers and two-phase for Go Handlers: under the row lock, one
	// failing event makes its batch run again event by event, so a Go
	// handler's effects outside the database would repeat for the others.
	// http: handlers always use the two-phase lease.
	LeaseMode string
	// Lease is how long a claimed event stays locked. Default 5m.
	Lease time.Duration
	// PollInterval is the backstop: workers look for work at least this
	// often even without a wake-up. Default 1s.
	PollInterval time.Duration
	// NotifyInterval is the least time between two coalesced NOTIFYs on
	// webhooks_events. Default 50ms.
	NotifyInterval time.Duration
	// PollOnly turns LISTEN/NOTIFY wake-ups off: workers then find work by
	// polling alone. Default false (listen, and poll as a backstop).
	PollOnly bool
	// DirectURL is a direct (session, not transaction-pooled) connection
	// for what needs a session: the listener's LISTEN and the migrations at
	// start. Empty means the database URL — unless that goes through a
	// transaction pooler: then the workers poll instead of listening, and
	// New refuses to start while migrations are pending.
	DirectURL string
	// ListenURL is the old name of DirectURL, used when DirectURL is empty.
	//
	// Deprecated: set DirectURL.
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
	// HistoryEvery schedules the move of processed events from the queue
	// (webhooks.inbox) into their day slices of webhooks.history. Default
	// 1s; negative disables.
	HistoryEvery time.Duration
	// HandlerTimeout bounds one handler call; past it the lease is no longer
	// extended. Default 5m.
	HandlerTimeout time.Duration
	// ShutdownTimeout bounds a graceful shutdown. Default 30s.
	ShutdownTimeout time.Duration
	// IngestTimeout bounds one ingest call; past it the request answers 503.
	// Default 10s.
	IngestTimeout time.Duration
	// IngestBatch is the most deliveries stored in one transaction: those
	// arriving while others commit share the next commit (group commit),
	// each still answered with its own outcome after that commit. 1 stores
	// each alone. Default 64.
	IngestBatch int
	// AdminAddr is the operators' listener: the console, /api/*, /metrics,
	// /healthz and /readyz. Default 127.0.0.1:8081; "off" disables it.
	AdminAddr string
	// AdminToken, when set (at least 16 characters), guards every admin
	// route but /metrics, /healthz and /readyz (a Bearer header or the
	// console's login cookie) and enables the actions. Empty: admin reads are
	// open and every action answers 403.
	AdminToken string
	// AdminHosts are Host names the admin listener answers besides its
	// listen host, localhost, 127.0.0.1 and [::1] (a defence against DNS
	// rebinding): the names a reverse proxy or an SSH tunnel uses.
	AdminHosts []string
	// AdminTrustedProxies are the reverse proxies in front of the admin
	// listener (PGINBOX_ADMIN_TRUSTED_PROXIES): from these peers alone
	// X-Forwarded-For and X-Forwarded-Proto are believed, so the failure
	// limiter counts the right-most address that is not one of them and the
	// session cookie is Secure when they say https. Empty: forwarded headers
	// are ignored.
	AdminTrustedProxies []netip.Prefix
	// ReadHeaderTimeout bounds how long a client may take to send its
	// request headers, on both listeners (slowloris). Default 10s.
	ReadHeaderTimeout time.Duration
	// SkipMigrate leaves the schema alone at start. Default false: New
	// applies the pending migrations.
	SkipMigrate bool

	// ProviderAPIs are the providers' APIs backfill reads, by provider name
	// (a provider of Providers; others are ignored): kind sume's status API,
	// stripe's event list, github's App delivery log. A backfill pass runs
	// after each scheduled reconcile pass. Empty (the default): no backfill.
	ProviderAPIs map[string]ProviderAPI
	// BackfillTimeout bounds one backfill pass; past it the lookups in
	// flight are abandoned. Default 2m.
	BackfillTimeout time.Duration
	// BackfillLookback is how far back the first event-log pass of a
	// provider (kinds stripe, github) reads; later passes start from its
	// checkpoint. Default 72h.
	BackfillLookback time.Duration

	// AlertURL receives a POST when an anomaly check starts to breach
	// (firing) and when it clears (resolved), within seconds of the run of
	// the checks that saw it; one per transition however many runners
	// share the database, retried with backoff. Empty (the default): none.
	AlertURL string
	// AlertSecret, a Standard Webhooks secret (whsec_<base64>), signs each
	// alert POST (webhook-id, webhook-timestamp, webhook-signature). Empty:
	// unsigned.
	AlertSecret string
	// AlertFormat is the alert POST's body: "pginbox" (the default),
	// "slack", "pagerduty" or "alertmanager".
	AlertFormat string
	// AlertRoutingKey is the PagerDuty routing key (AlertFormat pagerduty).
	AlertRoutingKey string

	// backfill and logs are built from ProviderAPIs by validate: the APIs
	// asked about gaps and the event logs read.
	backfill map[string]backfill.StatusAPI
	logs     map[string]backfill.EventLog
}

// ProviderAPI is where backfill reaches one provider's API.
type ProviderAPI struct {
	// URL is the API's base URL (PGINBOX_API_URL_<NAME>): backfill contacts
	// this origin and nothing else. Empty: the API is never contacted.
	URL string
	// Key is sent to that API, and only to it (PGINBOX_API_KEY_<NAME>):
	// kind sume a bearer token, stripe a key that reads Events, github the
	// App's private key (PEM, or a path to it). Empty: none.
	Key string
	// AppID is kind github's App id (PGINBOX_GITHUB_APP_ID_<NAME>).
	AppID string
}

// DefaultConfig returns the Config whose every field holds its default:
// what the zero value of each field means.
func DefaultConfig() Config { return Config{}.withDefaults() }

// withDefaults returns c with each field that holds no value set to its
// default, from the settings table.
func (c Config) withDefaults() Config {
	envconfig.SetDefaults(&c)
	if c.Providers == nil {
		c.Providers = map[string]verify.Provider{}
	}
	return c
}

// Validate reports the first setting of c (its zero fields taken as their
// defaults) that New cannot run with: a value out of its range, a rule
// between two settings, a provider without a verifier or a backfill API that
// cannot be built.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := envconfig.Check(c); err != nil {
		return err
	}
	return c.checkAll(fieldNames, discard)
}

// validate checks c (its defaults applied) for New and builds its backfill
// APIs; what they ignore is logged on log, the server's logger.
func (c *Config) validate(log *slog.Logger) error {
	if err := envconfig.Check(c); err != nil {
		return err
	}
	return c.checkAll(fieldNames, log)
}

// discard drops every record: Validate and ConfigFromEnv leave the
// warnings to New.
var discard = slog.New(slog.DiscardHandler)

// names says how errors name a setting: as the Config field a Go program
// sets, or as the variable ConfigFromEnv read.
type names struct{ env bool }

var fieldNames, envNames = names{env: false}, names{env: true}

// of returns the name of Config field.
func (n names) of(field string) string {
	if n.env {
		for _, s := range envconfig.Runner() {
			if s.Field == field && s.OldNameOf == "" {
				return s.Env
			}
		}
	}
	return field
}

// err is an error about Config field: msg follows its name.
func (n names) err(field, msg string) error {
	if n.env {
		return &envconfig.Error{Var: n.of(field), Msg: msg}
	}
	return fmt.Errorf("config: %s %s", field, msg)
}

// checkAll checks the rules that span settings (each setting's own range is
// in the settings table, checked by envconfig.Read or envconfig.Check) and
// builds the backfill APIs.
func (c *Config) checkAll(n names, log *slog.Logger) error {
	if c.AdminAddr != "off" && c.AdminToken == "" && !loopbackAddr(c.AdminAddr) {
		// Without a token the console's reads are open: payloads, errors,
		// status URLs. That is only safe where nobody else can connect.
		fix := "set PGINBOX_ADMIN_TOKEN, or listen on 127.0.0.1"
		if !n.env {
			fix = "set AdminToken (PGINBOX_ADMIN_TOKEN), or listen on 127.0.0.1 (AdminAddr, PGINBOX_ADMIN_ADDR)"
		}
		return n.err("AdminAddr", fmt.Sprintf("%q is not a loopback address and %s is empty: %s", c.AdminAddr, n.of("AdminToken"), fix))
	}
	if c.AlertFormat == "pagerduty" && c.AlertRoutingKey == "" && c.AlertURL != "" {
		return n.err("AlertRoutingKey", "is empty and "+n.of("AlertFormat")+" is pagerduty: PagerDuty Events v2 needs the integration's routing key")
	}
	kinds := map[string]string{}
	for name, p := range c.Providers {
		if p == nil {
			return fmt.Errorf("config: provider %q has no verifier", name)
		}
		kinds[name] = p.Kind()
	}
	endpoint := func(provider string) (string, string) {
		return c.ProviderAPIs[provider].URL, c.ProviderAPIs[provider].Key
	}
	appID := func(provider string) string { return c.ProviderAPIs[provider].AppID }
	var err error
	if c.backfill, err = backfill.APIs(kinds, endpoint); err == nil {
		c.logs, err = backfill.EventLogs(kinds, endpoint, appID)
	}
	if err != nil {
		var pe *envconfig.ProviderError
		switch {
		case errors.As(err, &pe) && n.env:
			return pe.Env()
		case errors.As(err, &pe):
			field := "URL"
			if pe.Setting == envconfig.APIKey {
				field = "Key"
			}
			return fmt.Errorf("config: ProviderAPIs[%q].%s (%s): %s", pe.Provider, field, pe.Setting.Var(pe.Provider), pe.Msg)
		case !n.env:
			return fmt.Errorf("config: ProviderAPIs: %w", err)
		}
		return err
	}
	for _, w := range envconfig.APIWarnings(slices.Sorted(maps.Keys(kinds)), endpoint) {
		log.Warn(w)
	}
	return nil
}

// ConfigFromEnv reads the configuration from the environment getenv returns
// (os.Getenv, or the command line's flags over it), each variable once:
// PGINBOX_ADDR, PGINBOX_PROVIDERS with each PGINBOX_SECRET_<NAME> (and
// PGINBOX_URL_<NAME>, which kind square requires),
// PGINBOX_HANDLER, PGINBOX_WORKERS, the durations, PGINBOX_API_URL_<NAME>,
// PGINBOX_API_KEY_<NAME> and PGINBOX_GITHUB_APP_ID_<NAME> for backfill, and
// the rest of the PGINBOX_* variables the reference documents. The field of
// a variable unset stays zero: its default. Invalid values (an unknown
// provider kind, a provider without secrets, a bad duration or number, a
// rule between settings) are errors that name the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	env, err := envconfig.Read(getenv, envconfig.Runner())
	if err != nil {
		return Config{}, err
	}
	c := Config{Providers: map[string]verify.Provider{}}
	envconfig.Apply(env, &c)
	for _, p := range env.Providers {
		if !slices.Contains(verify.Kinds(), p.Kind) {
			return c, &envconfig.Error{Var: "PGINBOX_PROVIDERS", Msg: fmt.Sprintf("provider %q: unknown kind %q (supported: %s)",
				p.Name, p.Kind, strings.Join(verify.Kinds(), ", "))}
		}
		if len(p.Secrets) == 0 {
			return c, &envconfig.Error{Var: p.SecretVar, Msg: fmt.Sprintf("provider %q has no secret", p.Name)}
		}
		urlRow, _ := envconfig.Lookup("PGINBOX_URL_<NAME>")
		url := env.Each(urlRow.Env, p.Name)
		if url == "" && verify.SignsURL(p.Kind) {
			return c, &envconfig.Error{Var: urlRow.Var(p.Name), Msg: fmt.Sprintf(
				"provider %q of kind %s needs the exact URL registered at the provider, which the signature covers (e.g. https://hooks.example.com/webhooks/%s)",
				p.Name, p.Kind, p.Name)}
		}
		v, err := verify.NewWithURL(p.Kind, p.Secrets, url)
		if err != nil {
			if errors.Is(err, verify.ErrURL) {
				return c, &envconfig.Error{Var: urlRow.Var(p.Name), Msg: err.Error()}
			}
			return c, &envconfig.Error{Var: p.SecretVar, Msg: err.Error()}
		}
		c.Providers[p.Name] = v
		url, key := env.Endpoint(p.Name)
		if api := (ProviderAPI{URL: url, Key: key, AppID: env.AppID(p.Name)}); api != (ProviderAPI{}) {
			if c.ProviderAPIs == nil {
				c.ProviderAPIs = map[string]ProviderAPI{}
			}
			c.ProviderAPIs[p.Name] = api
		}
	}
	if c.Handler, err = ParseHandler(env.String("PGINBOX_HANDLER"), env.Duration("PGINBOX_HTTP_TIMEOUT")); err != nil {
		return c, &envconfig.Error{Var: "PGINBOX_HANDLER", Msg: err.Error()}
	}
	d := c.withDefaults()
	if err := d.checkAll(envNames, discard); err != nil {
		return c, err
	}
	c.backfill, c.logs = d.backfill, d.logs
	return c, nil
}

// loopbackAddr reports whether host:port addr listens on loopback only
// (127.0.0.0/8, ::1 or localhost); an empty host (all interfaces) is not.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
