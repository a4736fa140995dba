package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/alert"
	"github.com/pginbox/pginbox/internal/database"
	"github.com/pginbox/pginbox/internal/ingest"
	"github.com/pginbox/pginbox/internal/maintenance"
	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/notify"
	"github.com/pginbox/pginbox/internal/process"
	"github.com/pginbox/pginbox/internal/tracing"
)

// Server is a running pginbox sidecar: the webhook endpoint, the worker
// pool, the listener and the schedules, on one database.
type Server struct {
	cfg    Config
	url    string
	log    *slog.Logger
	ingest *pgxpool.Pool // the HTTP path: never starved by workers
	work   *pgxpool.Pool // workers, schedules, pings
	// console is the admin listener's own small pool: a flood of console
	// requests waits for one of its connections and never takes one from
	// the workers or the ingest path.
	console *pgxpool.Pool
	metrics *metrics.Set
	// tracing is the OpenTelemetry setup from the OTEL_* environment; nil
	// (off) without an endpoint.
	tracing *tracing.Tracing

	workers  *process.Workers
	notifier *notify.Notifier
	maint    *maintenance.Maintenance
	alerts   *alert.Sender  // nil without PGINBOX_ALERT_URL
	mux      *http.ServeMux // the public listener
	adminMux http.Handler   // the operators' listener

	metricsMu sync.Mutex // guards metrics for the ingest pool's notice handler, set before it exists

	// direct is the session connection for LISTEN and migrations ("" means
	// url); pooled says url goes through a transaction pooler.
	direct string
	pooled bool

	// schemaVersion is the newest migration this binary embeds: /readyz
	// wants the database at least there.
	schemaVersion int64
	// readiness shares one /readyz check among all its callers.
	readiness readiness

	listenerMu sync.Mutex
	addr       net.Addr
	adminAddr  net.Addr
	ready      chan struct{}
}

// New validates cfg, connects to databaseURL, applies the pending
// migrations (unless cfg.SkipMigrate), checks the handler and builds the
// server. A nil log logs JSON to stderr. Close releases the server if Run is
// not called.
func New(ctx context.Context, cfg Config, databaseURL string, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	cfg = cfg.withDefaults()
	// The configuration's warnings (a key without its URL) go to log, the
	// JSON handler, like every other line of the server.
	if err := cfg.validate(log); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, url: databaseURL, log: log, ready: make(chan struct{})}
	var err error
	if s.schemaVersion, err = latestVersion(); err != nil {
		return nil, err
	}
	if s.direct = cfg.DirectURL; s.direct == "" {
		s.direct = cfg.ListenURL
	}
	// Session state (the migration's lock, LISTEN, named prepared
	// statements) does not survive a transaction pooler: find out whether
	// DATABASE_URL is one.
	probed := true
	if s.pooled, err = database.TransactionPooled(ctx, databaseURL); err != nil {
		if !cfg.SkipMigrate {
			if u := database.Unreachable("DATABASE_URL", err); u != err {
				return nil, u
			}
			return nil, fmt.Errorf("database: %w", err)
		}
		probed = false
		log.Warn("could not tell whether the database URL is a transaction pooler; using the pooler-safe exec mode", "error", err)
	}
	if s.pooled && s.direct == "" && !cfg.PollOnly {
		log.Info("the database URL goes through a transaction pooler: workers poll instead of LISTEN (set PGINBOX_DIRECT_URL for wake-ups)")
	}
	// Named prepared statements (pgx's cache_statement) on a direct
	// connection, measured faster than the pooler-safe cache_describe;
	// cache_describe through a transaction pooler or when unknown.
	mode := database.DefaultExecMode
	if probed && !s.pooled {
		mode = pgx.QueryExecModeCacheStatement
	}
	// The ingest path has a pool of its own, so workers never starve it; its
	// statement makes each commit wait for the WAL flush (see package ingest).
	// Its notices count different bodies under a stored unsigned key.
	notices := ingest.Notices(s.metricsOnce, cfg.Providers)
	// Traces, from the OpenTelemetry SDK's own environment: the pools'
	// statements become child spans of the span in their context.
	if s.tracing, err = tracing.FromEnv(ctx, nil); err != nil {
		return nil, err
	}
	traced := func(pc *pgxpool.Config) {
		if t := s.tracing.PgxTracer(); t != nil {
			pc.ConnConfig.Tracer = t
		}
	}
	if s.ingest, err = newPool(ctx, databaseURL, "pginbox-ingest", 16, mode, notices, traced); err != nil {
		s.Close()
		return nil, err
	}
	if s.work, err = newPool(ctx, databaseURL, "pginbox-worker", int32(cfg.Workers+4), mode, nil, traced); err != nil {
		s.Close()
		return nil, err
	}
	if s.console, err = newPool(ctx, databaseURL, "pginbox-admin", consolePoolSize, mode, nil); err != nil {
		s.Close()
		return nil, err
	}
	if !cfg.SkipMigrate {
		if err := s.migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := process.Check(ctx, s.work, cfg.Handler); err != nil {
		s.Close()
		return nil, err
	}
	s.warnUnservedOrdering(ctx)
	m := metrics.New(s.console)
	// The alert rules' provider series, served as 0 from the start: an
	// increase needs a series that existed before it.
	m.ServeProviders(slices.Sorted(maps.Keys(cfg.Providers)))
	s.metricsMu.Lock()
	s.metrics = m
	s.metricsMu.Unlock()
	s.notifier = notify.NewNotifier(s.work, cfg.NotifyInterval, m, log.With("component", "notifier"))
	if cfg.Handler != nil {
		host, _ := os.Hostname()
		s.workers = &process.Workers{
			Pool: s.work, Handler: cfg.Handler, N: cfg.Workers, BatchSize: cfg.BatchSize, Lease: cfg.Lease,
			LeaseMode:    cfg.LeaseMode,
			PollInterval: cfg.PollInterval, ShutdownTimeout: cfg.ShutdownTimeout, HandlerTimeout: cfg.HandlerTimeout,
			Name: fmt.Sprintf("%s:%d:%s", host, os.Getpid(), randomToken()[:6]), Metrics: m,
			Log: log.With("component", "workers"), Tracing: s.tracing,
		}
	}
	if cfg.AlertURL != "" {
		s.alerts, err = alert.New(s.work, alert.Config{
			URL: cfg.AlertURL, Secret: cfg.AlertSecret, Format: cfg.AlertFormat, RoutingKey: cfg.AlertRoutingKey,
		}, m, log.With("component", "alert"))
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	s.maint = maintenance.New(s.work, maintenance.Config{
		AfterChecks:    s.checked,
		ReconcileEvery: cfg.ReconcileEvery, ChecksEvery: cfg.ChecksEvery, PruneEvery: cfg.PruneEvery,
		HistoryEvery: cfg.HistoryEvery,
		KeepPayload:  cfg.KeepPayload, KeepKeys: cfg.KeepKeys,
		Backfill: cfg.backfill, Logs: cfg.logs, BackfillTimeout: cfg.BackfillTimeout, BackfillLookback: cfg.BackfillLookback,
	}, m, log)
	s.mux = s.routes()
	if s.adminMux, err = s.adminHandler(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// warnUnservedOrdering logs a warning for each provider set_ordering
// ordered that this runner does not serve: set_ordering takes the name of
// /webhooks/{name}, and a kind in its place ('stripe' for payments=stripe)
// orders nothing. A runner serving no provider (workers only) says nothing.
func (s *Server) warnUnservedOrdering(ctx context.Context) {
	if len(s.cfg.Providers) == 0 {
		return
	}
	rows, err := s.work.Query(ctx, `SELECT provider FROM webhooks.ordering ORDER BY provider`)
	var ordered []string
	if err == nil {
		ordered, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		// Advisory: a role without SELECT on it (grant_ingest) still serves.
		s.log.Info("could not check the ordered providers against the served ones (webhooks.ordering)", "error", err)
		return
	}
	served := slices.Sorted(maps.Keys(s.cfg.Providers))
	for _, name := range ordered {
		if _, ok := s.cfg.Providers[name]; ok {
			continue
		}
		ofKind := []string{}
		for _, p := range served {
			if s.cfg.Providers[p].Kind() == name {
				ofKind = append(ofKind, p)
			}
		}
		s.log.Warn("set_ordering ordered a provider this runner does not serve, so no delivery here is ordered by it: "+
			"set_ordering takes the provider's name in PGINBOX_PROVIDERS (the {provider} of /webhooks/{provider}), not its kind",
			"provider", name, "served", served, "served_of_that_kind", ofKind)
	}
}

// consolePoolSize bounds the connections the admin listener uses.
const consolePoolSize = 2

// maxHeaderBytes bounds a request's headers on both listeners (431 past it).
const maxHeaderBytes = 64 << 10

// migrate applies the pending migrations on the direct connection when
// there is one, else on the pool; through a transaction pooler without a
// direct connection it only checks that none is pending.
func (s *Server) migrate(ctx context.Context) error {
	pool := s.work
	switch {
	case s.direct != "":
		p, err := newPool(ctx, s.direct, "pginbox-migrate", 2, database.DefaultExecMode, nil)
		if err != nil {
			return fmt.Errorf("direct connection: %w", err)
		}
		defer p.Close()
		if err := p.Ping(ctx); err != nil {
			if u := database.Unreachable("PGINBOX_DIRECT_URL", err); u != err {
				return u
			}
			return fmt.Errorf("direct connection: %w", err)
		}
		pool = p
	case s.pooled:
		if err := checkSchema(ctx, s.work, s.schemaVersion); err != nil {
			var se *schemaError
			if errors.As(err, &se) {
				return fmt.Errorf("%w, and a migration cannot run there (its session lock would not hold): "+
					"set PGINBOX_DIRECT_URL to a direct connection, or run pginbox migrate with it: %v", database.ErrTransactionPooler, err)
			}
			return err
		}
		s.log.Info("schema up to date; migrations skipped (transaction pooler)")
		return nil
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return pginbox.Migrate(ctx, db)
}

// newPool opens a pool on url for pginbox (see database.PoolConfig: drops a
// connection to a read-only server) sending statements in mode, unless
// the URL chooses its own; onNotice, when set, receives the notices of its
// connections.
func newPool(ctx context.Context, url, app string, maxConns int32, mode pgx.QueryExecMode, onNotice pgconn.NoticeHandler, opts ...func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	pc, err := database.PoolConfig(url, app)
	if err != nil {
		return nil, err
	}
	if !database.SetsExecMode(url) {
		pc.ConnConfig.DefaultQueryExecMode = mode
	}
	pc.MaxConns = maxConns
	if onNotice != nil {
		pc.ConnConfig.OnNotice = onNotice
	}
	for _, o := range opts {
		o(pc)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

// metricsOnce returns s.metrics, nil while New has not created them yet.
func (s *Server) metricsOnce() *metrics.Set {
	s.metricsMu.Lock()
	defer s.metricsMu.Unlock()
	if s.metrics == nil {
		return nil
	}
	return s.metrics
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	rc := &ingest.Receiver{
		Pool: s.ingest, Providers: s.cfg.Providers, MaxBody: s.cfg.MaxBody, Timeout: s.cfg.IngestTimeout,
		Metrics: s.metrics, Log: s.log.With("component", "receiver"), OnStored: s.stored, Tracing: s.tracing,
		MaxBatch: s.cfg.IngestBatch,
	}
	mux.Handle("POST /webhooks/{provider}", rc)
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	return mux
}

// checked runs after each run of the checks: the alerts it queued are sent
// at once instead of at the sender's next poll.
func (s *Server) checked() {
	if s.alerts != nil {
		s.alerts.Wake()
	}
}

// stored runs after a delivery committed: wake our own workers at once and
// other runners through a coalesced NOTIFY.
func (s *Server) stored() {
	if s.workers != nil {
		s.workers.Wake("local")
	}
	s.notifier.Signal()
}

// Handler returns the public listener's HTTP handler (POST
// /webhooks/{provider}, /healthz, /readyz), for mounting in another server
// instead of calling Run.
func (s *Server) Handler() http.Handler { return s.mux }

// AdminHandler returns the operators' listener's handler (the console,
// /api/*, /metrics, /healthz, /readyz, with its token and Host checks). Never
// mount it on an address the internet reaches without the token set.
func (s *Server) AdminHandler() http.Handler { return s.adminMux }

// AdminAddr returns the address the admin listener listens on once Run has
// started, or nil when it is off.
func (s *Server) AdminAddr() net.Addr {
	<-s.ready
	s.listenerMu.Lock()
	defer s.listenerMu.Unlock()
	return s.adminAddr
}

// Addr returns the address the server listens on once Run has started.
func (s *Server) Addr() net.Addr {
	<-s.ready
	s.listenerMu.Lock()
	defer s.listenerMu.Unlock()
	return s.addr
}

// Run serves until ctx ends, then shuts down gracefully: stop accepting,
// finish in-flight requests and events (within ShutdownTimeout), release
// unstarted events, close the pools.
func (s *Server) Run(ctx context.Context) error {
	defer s.Close()
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		close(s.ready)
		return listenError("PGINBOX_ADDR", s.cfg.Addr, err)
	}
	var adminLn net.Listener
	if s.cfg.AdminAddr != "off" {
		if adminLn, err = net.Listen("tcp", s.cfg.AdminAddr); err != nil {
			ln.Close()
			close(s.ready)
			return listenError("PGINBOX_ADMIN_ADDR", s.cfg.AdminAddr, err)
		}
	}
	s.listenerMu.Lock()
	s.addr = ln.Addr()
	if adminLn != nil {
		s.adminAddr = adminLn.Addr()
	}
	s.listenerMu.Unlock()
	close(s.ready)

	bg, stopBG := context.WithCancel(ctx)
	defer stopBG()
	var wg sync.WaitGroup
	spawn := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(bg) }()
	}
	spawn(s.notifier.Run)
	if s.workers != nil {
		spawn(s.workers.Run)
	}
	spawn(s.maint.Run)
	if s.alerts != nil {
		spawn(s.alerts.Run)
	}
	if !s.cfg.PollOnly && (s.direct != "" || !s.pooled) {
		url := s.direct
		if url == "" {
			url = s.url
		}
		l := &notify.Listener{
			URL: url, Pool: s.work, Metrics: s.metrics, Log: s.log.With("component", "listener"),
			PingEvery: s.cfg.ListenPing,
			Channels: map[string]func(string){
				notify.EventsChannel: func(src string) {
					if s.workers != nil {
						s.workers.Wake(src)
					}
				},
				notify.ReconcileChannel: func(src string) {
					if src == "notify" {
						s.maint.Trigger("reconcile", "notify")
					}
				},
			},
		}
		spawn(l.Run)
	}

	newHTTP := func(h http.Handler) *http.Server {
		return &http.Server{
			Handler:           h,
			ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		}
	}
	srv := newHTTP(s.mux)
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	adminAt, consoleURL := "off", "off"
	var adminSrv *http.Server
	if adminLn != nil {
		adminSrv = newHTTP(s.adminMux)
		go func() { errc <- adminSrv.Serve(adminLn) }()
		adminAt = adminLn.Addr().String()
		consoleURL = "http://" + adminAt + "/"
	}
	s.log.Info("pginbox serving", "addr", ln.Addr().String(), "admin_addr", adminAt,
		"webhooks_url", "http://"+ln.Addr().String()+"/webhooks/{provider}", "console_url", consoleURL, "providers", len(s.cfg.Providers),
		"workers", s.workersN(), "listen", !s.cfg.PollOnly, "admin_token", s.cfg.AdminToken != "",
		"traces", s.tracing.Enabled())

	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	s.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		s.log.Warn("http shutdown", "error", serr)
	}
	if adminSrv != nil {
		if serr := adminSrv.Shutdown(sctx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			s.log.Warn("admin http shutdown", "error", serr)
		}
	}
	stopBG()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *Server) workersN() int {
	if s.workers == nil {
		return 0
	}
	return s.workers.N
}

// Close releases the database pools and exports the spans still
// buffered (for at most five seconds).
func (s *Server) Close() {
	if s.tracing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.tracing.Shutdown(ctx); err != nil {
			s.log.Warn("exporting the last spans failed", "error", err)
		}
		cancel()
		s.tracing = nil
	}
	if s.ingest != nil {
		s.ingest.Close()
	}
	if s.work != nil {
		s.work.Close()
	}
	if s.console != nil {
		s.console.Close()
	}
}

// randomToken is a random 16-hex-digit token (the workers' name suffix).
func randomToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeJSON answers status with v as JSON (the probes and the console).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
