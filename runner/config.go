package runner

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/backfill"
	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/retention"
	"github.com/pginbox/pginbox/runner/verify"
)

// Config configures a [Server]. [ConfigFromEnv] fills it from the
// environment; a Go program embedding pginbox can build it directly. The zero
// value of every field means its default, as documented on the field; [New]
// refuses a Config whose values are out of range.
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
	// HandlerTimeout bounds one handler call; past it the lease is no longer
	// extended. Default 5m.
	HandlerTimeout time.Duration
	// ShutdownTimeout bounds a graceful shutdown. Default 30s.
	ShutdownTimeout time.Duration
	// IngestTimeout bounds one ingest call; past it the request answers 503.
	// Default 10s.
	IngestTimeout time.Duration
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
	// ReadHeaderTimeout bounds how long a client may take to send its
	// request headers, on both listeners (slowloris). Default 10s.
	ReadHeaderTimeout time.Duration
	// SkipMigrate leaves the schema alone at start. Default false: New
	// applies the pending migrations.
	SkipMigrate bool

	// backfill are the providers' APIs a backfill pass asks after each
	// scheduled reconcile pass; ConfigFromEnv sets them from
	// PGINBOX_API_URL_<NAME> and PGINBOX_API_KEY_<NAME>. Empty: no backfill.
	backfill map[string]backfill.StatusAPI
	// backfillTimeout bounds one backfill pass (PGINBOX_BACKFILL_TIMEOUT).
	backfillTimeout time.Duration
	// logs are the providers' event logs (Stripe events, GitHub App
	// deliveries) each backfill pass reads; backfillLookback is how far back
	// a provider's first pass reads (PGINBOX_BACKFILL_LOOKBACK).
	logs             map[string]backfill.EventLog
	backfillLookback time.Duration
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
	if c.AdminAddr == "" {
		c.AdminAddr = "127.0.0.1:8081"
	}
	def(&c.ReadHeaderTimeout, 10*time.Second)
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
	def(&c.KeepPayload, retention.DefaultKeepPayload)
	def(&c.KeepKeys, retention.DefaultKeepKeys)
	def(&c.PruneEvery, time.Hour)
	def(&c.IngestTimeout, 10*time.Second)
	def(&c.backfillTimeout, 2*time.Minute)
	if c.Providers == nil {
		c.Providers = map[string]verify.Provider{}
	}
	return c
}

// validate reports the first setting of a Config (with its defaults
// applied) that New cannot run with.
func (c Config) validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("config: Addr %q is not host:port", c.Addr)
	}
	if c.AdminAddr != "off" {
		if _, _, err := net.SplitHostPort(c.AdminAddr); err != nil {
			return fmt.Errorf("config: AdminAddr %q is not host:port or off", c.AdminAddr)
		}
	}
	if c.AdminAddr != "off" && c.AdminToken == "" && !loopbackAddr(c.AdminAddr) {
		// Without a token the console's reads are open: payloads, errors,
		// status URLs. That is only safe where nobody else can connect.
		return fmt.Errorf("config: AdminAddr %q is not a loopback address and AdminToken is empty: set PGINBOX_ADMIN_TOKEN, or listen on 127.0.0.1", c.AdminAddr)
	}
	if c.AdminToken != "" && len(c.AdminToken) < 16 {
		return errors.New("config: AdminToken is shorter than 16 characters")
	}
	if c.LeaseMode != "" && c.LeaseMode != "row-lock" && c.LeaseMode != "two-phase" {
		return fmt.Errorf("config: LeaseMode %q is not row-lock or two-phase", c.LeaseMode)
	}
	if c.Workers > 1024 || c.BatchSize > 10000 {
		return fmt.Errorf("config: Workers %d (at most 1024) or BatchSize %d (at most 10000) out of range", c.Workers, c.BatchSize)
	}
	for name, d := range map[string]time.Duration{"Lease": c.Lease, "PollInterval": c.PollInterval,
		"NotifyInterval": c.NotifyInterval, "ShutdownTimeout": c.ShutdownTimeout, "HandlerTimeout": c.HandlerTimeout,
		"KeepPayload": c.KeepPayload, "KeepKeys": c.KeepKeys, "IngestTimeout": c.IngestTimeout, "ReadHeaderTimeout": c.ReadHeaderTimeout} {
		if d < 0 {
			return fmt.Errorf("config: %s %s is negative", name, d)
		}
	}
	if c.KeepKeys <= c.KeepPayload {
		return errors.New("config: KeepKeys must be longer than KeepPayload, so late redeliveries still dedupe")
	}
	for name, p := range c.Providers {
		if p == nil {
			return fmt.Errorf("config: provider %q has no verifier", name)
		}
	}
	return nil
}

// ConfigFromEnv reads the configuration from the environment getenv returns
// (os.Getenv, or the command line's flags over it): PGINBOX_ADDR,
// PGINBOX_PROVIDERS with each PGINBOX_SECRET_<NAME>, PGINBOX_HANDLER,
// PGINBOX_WORKERS, the durations, PGINBOX_API_URL_<NAME> and
// PGINBOX_API_KEY_<NAME> for backfill, and the rest of the PGINBOX_*
// variables the reference documents. Invalid values (an unknown provider
// kind, a provider without secrets, a bad duration or number) are errors
// that name the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	env, err := envconfig.Read(getenv)
	if err != nil {
		return Config{}, err
	}
	return configFrom(env)
}

// configFrom builds a Config from parsed settings: the verifiers, the
// handler and the backfill APIs.
func configFrom(env envconfig.Settings) (Config, error) {
	c := Config{
		Addr: env.Addr, MaxBody: env.MaxBody, Workers: env.Workers, BatchSize: env.BatchSize,
		Lease: env.Lease, PollInterval: env.PollInterval, NotifyInterval: env.NotifyInterval,
		PollOnly: env.PollOnly, DirectURL: env.DirectURL, ListenPing: env.ListenPing,
		ReconcileEvery: env.ReconcileEvery, ChecksEvery: env.ChecksEvery,
		KeepPayload: env.KeepPayload, KeepKeys: env.KeepKeys, PruneEvery: env.PruneEvery,
		HandlerTimeout: env.HandlerTimeout, ShutdownTimeout: env.ShutdownTimeout, IngestTimeout: env.IngestTimeout,
		AdminAddr: env.AdminAddr, AdminToken: env.AdminToken, AdminHosts: env.AdminHosts, SkipMigrate: env.SkipMigrate, LeaseMode: env.LeaseMode,
		Providers: map[string]verify.Provider{},
	}
	for _, p := range env.Providers {
		if !slices.Contains(verify.Kinds(), p.Kind) {
			return c, &envconfig.Error{Var: "PGINBOX_PROVIDERS", Msg: fmt.Sprintf("provider %q: unknown kind %q (supported: %s)",
				p.Name, p.Kind, strings.Join(verify.Kinds(), ", "))}
		}
		if len(p.Secrets) == 0 {
			return c, &envconfig.Error{Var: p.SecretVar, Msg: fmt.Sprintf("provider %q has no secret", p.Name)}
		}
		v, err := verify.New(p.Kind, p.Secrets)
		if err != nil {
			return c, &envconfig.Error{Var: p.SecretVar, Msg: err.Error()}
		}
		c.Providers[p.Name] = v
	}
	var err error
	if c.Handler, err = ParseHandler(env.Handler, env.HTTPTimeout); err != nil {
		return c, &envconfig.Error{Var: "PGINBOX_HANDLER", Msg: err.Error()}
	}
	if c.backfill, err = backfill.APIs(env.Kinds(), env.Endpoint, nil); err != nil {
		return c, err
	}
	c.backfillTimeout = env.BackfillTimeout
	if c.logs, err = backfill.EventLogs(env.Kinds(), env.Endpoint, env.AppID); err != nil {
		return c, err
	}
	c.backfillLookback = env.BackfillLookback
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
