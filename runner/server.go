package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pginbox/pginbox"
)

// Server is a running pginbox sidecar: the webhook endpoint, the worker
// pool, the listener and the schedules, on one database.
type Server struct {
	cfg     Config
	url     string
	log     *slog.Logger
	ingest  *pgxpool.Pool // the HTTP path: never starved by workers
	work    *pgxpool.Pool // workers, schedules, pings
	metrics *metrics

	workers  *workerPool
	notifier *notifier
	jobs     map[string]*job
	mux      *http.ServeMux

	// schemaVersion is the newest migration this binary embeds: /readyz
	// wants the database at least there.
	schemaVersion int64

	listenerMu sync.Mutex
	addr       net.Addr
	ready      chan struct{}
}

// New validates cfg, connects to databaseURL, applies the pending
// migrations (unless cfg.SkipMigrate), checks the handler and builds the
// server. A nil log logs JSON to stderr. Close releases the server if Run is
// not called.
func New(ctx context.Context, cfg Config, databaseURL string, log *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	s := &Server{cfg: cfg, url: databaseURL, log: log, jobs: map[string]*job{}, ready: make(chan struct{})}
	var err error
	if s.schemaVersion, err = latestVersion(); err != nil {
		return nil, err
	}
	// The ingest path answers 2xx only for durable rows: whatever the
	// server's default, its commits wait for the WAL flush.
	if s.ingest, err = newPool(ctx, databaseURL, "pginbox-ingest", 16, "synchronous_commit", "on"); err != nil {
		return nil, err
	}
	if s.work, err = newPool(ctx, databaseURL, "pginbox-worker", int32(cfg.Workers+4)); err != nil {
		s.ingest.Close()
		return nil, err
	}
	if !cfg.SkipMigrate {
		db := stdlib.OpenDBFromPool(s.work)
		err := pginbox.Migrate(ctx, db)
		db.Close()
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	if h, ok := cfg.Handler.(*sqlHandler); ok {
		if err := h.Check(ctx, s.work); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.metrics = newMetrics(s.work)
	s.notifier = newNotifier(s.work, cfg.NotifyInterval, s.metrics, log.With("component", "notifier"))
	if cfg.Handler != nil {
		host, _ := os.Hostname()
		s.workers = &workerPool{
			Pool: s.work, Handler: cfg.Handler, N: cfg.Workers, BatchSize: cfg.BatchSize, Lease: cfg.Lease,
			TwoPhase:     cfg.LeaseMode == "two-phase",
			PollInterval: cfg.PollInterval, ShutdownTimeout: cfg.ShutdownTimeout, HandlerTimeout: cfg.HandlerTimeout,
			Name: fmt.Sprintf("%s:%d:%s", host, os.Getpid(), randomToken()[:6]), Metrics: s.metrics,
			Log: log.With("component", "workers"),
		}
	}
	s.addJobs()
	s.mux = s.routes()
	return s, nil
}

func newPool(ctx context.Context, url, app string, maxConns int32, params ...string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	pc.MaxConns = maxConns
	pc.ConnConfig.RuntimeParams["application_name"] = app
	// A cancelled context (a handler's timeout, a client gone) cancels the
	// statement on the server and keeps the connection: pgx's default closes
	// it, which would take the worker's open batch transaction with it, so
	// one slow handler could not be failed alone.
	pc.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 5 * time.Second}
	}
	for i := 0; i+1 < len(params); i += 2 {
		pc.ConnConfig.RuntimeParams[params[i]] = params[i+1]
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	rc := &receiver{
		Pool: s.ingest, Providers: s.cfg.Providers, MaxBody: s.cfg.MaxBody, Timeout: s.cfg.IngestTimeout,
		Metrics: s.metrics, Log: s.log.With("component", "receiver"), OnStored: s.stored,
	}
	mux.Handle("POST /webhooks/{provider}", rc)
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}))
	s.statusRoutes(mux)
	return mux
}

// stored runs after a delivery committed: wake our own workers at once and
// other runners through a coalesced NOTIFY.
func (s *Server) stored() {
	if s.workers != nil {
		s.workers.Wake("local")
	}
	s.notifier.Signal()
}

// Handler returns the server's HTTP handler (POST /webhooks/{provider},
// /healthz, /readyz, /metrics and the status page), for mounting in another
// server instead of calling Run.
func (s *Server) Handler() http.Handler { return s.mux }

// Addr returns the address the server listens on once Run has started.
func (s *Server) Addr() net.Addr {
	<-s.ready
	s.listenerMu.Lock()
	defer s.listenerMu.Unlock()
	return s.addr
}

// triggerJob runs a scheduled job now (see [job.Trigger]); false if unknown.
func (s *Server) triggerJob(name, why string) bool {
	j, ok := s.jobs[name]
	if ok {
		j.Trigger(why)
	}
	return ok
}

// Run serves until ctx ends, then shuts down gracefully: stop accepting,
// finish in-flight requests and events (within ShutdownTimeout), release
// unstarted events, close the pools.
func (s *Server) Run(ctx context.Context) error {
	defer s.Close()
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		close(s.ready)
		return fmt.Errorf("listen %s: %w", s.cfg.Addr, err)
	}
	s.listenerMu.Lock()
	s.addr = ln.Addr()
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
	for _, j := range s.jobs {
		spawn(func(ctx context.Context) { j.Loop(ctx, s.metrics, s.log.With("component", "schedule")) })
	}
	if !s.cfg.PollOnly {
		url := s.cfg.ListenURL
		if url == "" {
			url = s.url
		}
		l := &listener{
			URL: url, Pool: s.work, Metrics: s.metrics, Log: s.log.With("component", "listener"),
			PingEvery: s.cfg.ListenPing,
			Channels: map[string]func(string){
				"webhooks_events": func(src string) {
					if s.workers != nil {
						s.workers.Wake(src)
					}
				},
				"webhooks_reconcile": func(src string) {
					if src == "notify" {
						s.triggerJob("reconcile", "notify")
					}
				},
			},
		}
		spawn(l.Run)
	}

	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("pginbox serving", "addr", ln.Addr().String(), "providers", len(s.cfg.Providers),
		"workers", s.workersN(), "listen", !s.cfg.PollOnly)

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

// Close releases the database pools.
func (s *Server) Close() {
	if s.ingest != nil {
		s.ingest.Close()
	}
	if s.work != nil {
		s.work.Close()
	}
}
