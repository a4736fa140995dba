// Package console is pginbox's admin listener: the operators' web console
// (status overview, event list and detail, replay, pause and resume), its
// JSON API under /api/, the token and session-cookie authentication with its
// failure limiter and Host check, and the /metrics, /healthz and /readyz
// routes the runner hands it. It reads and writes the database through the
// small pool it is given, so a flood of console requests never takes a
// connection from the workers or the ingest path.
package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/console/auth"
)

// Config is what the console needs from the runner that serves it.
type Config struct {
	// Pool is the admin listener's own small pool; the console does not
	// close it.
	Pool *pgxpool.Pool
	// Token is the admin token (PGINBOX_ADMIN_TOKEN). Empty leaves the
	// console read-only and open on its listener.
	Token string
	// Addr is the address the admin listener listens on: its host, unless
	// unspecified, is a Host the listener answers to.
	Addr string
	// Hosts are further Host names the listener answers to
	// (PGINBOX_ADMIN_HOSTS), beside localhost, 127.0.0.1 and ::1.
	Hosts []string
	// TrustedProxies are the reverse proxies (PGINBOX_ADMIN_TRUSTED_PROXIES)
	// whose X-Forwarded-For and X-Forwarded-Proto are believed: the failure
	// limiter then counts the client they name, and the session cookie is
	// Secure when they say https. Empty: forwarded headers are ignored.
	TrustedProxies []netip.Prefix
	// Providers are the configured provider names, for the filters and the
	// overview.
	Providers []string
	// Metrics serves GET /metrics, Healthz GET /healthz and Readyz GET
	// /readyz, with neither the token nor the Host check (orchestrators
	// and scrapers reach them by IP). A nil one is not served.
	Metrics, Healthz, Readyz http.Handler
	// NoHandler says the runner processes nothing itself
	// (PGINBOX_HANDLER=none): a due event nothing claimed waits for another
	// stack's worker, and the event page says so.
	NoHandler bool
	// Wake, when set, wakes the workers after events were replayed or a
	// provider resumed; it is called with the reason ("replay", "resume").
	Wake func(reason string)
	// Log receives the console's warnings and its audit lines (logins,
	// replays, pauses); nil discards them.
	Log *slog.Logger
	// Now is the clock of the sessions, the failure limiter, the status
	// cache and the list's windows; nil means time.Now.
	Now func() time.Time
}

// Console is the admin listener's handler and the state behind it: the
// authentication and the cached status.
type Console struct {
	cfg     Config
	pool    *pgxpool.Pool
	log     *slog.Logger
	now     func() time.Time
	auth    *auth.Auth
	cache   statusCache
	handler http.Handler
	// started is when the console was built: the overview says "no data"
	// until a check has run since.
	started time.Time
}

// New builds the console from cfg; it opens nothing (the pool is cfg's).
func New(cfg Config) (*Console, error) {
	if cfg.Pool == nil {
		return nil, errors.New("console: no pool")
	}
	c := &Console{cfg: cfg, pool: cfg.Pool, log: cfg.Log, now: cfg.Now}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.started = c.now()
	a, err := auth.New(cfg.Token, cfg.Addr, cfg.Hosts, cfg.TrustedProxies, c.now)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c.auth = a
	c.handler = c.routes()
	return c, nil
}

// Handler returns the admin listener's handler: the console, /api/*,
// /metrics, /healthz and /readyz, behind the token and Host checks. Never
// mount it on an address the internet reaches without a token.
func (c *Console) Handler() http.Handler { return c.handler }

// consoleRoutes registers the console's pages and JSON on the guarded mux.
func (c *Console) consoleRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /console.js", c.consoleScript)
	mux.HandleFunc("GET /events", c.eventsHTML)
	mux.HandleFunc("GET /events/{id}", c.eventHTML)
	mux.HandleFunc("GET /api/events", c.apiEvents)
	mux.HandleFunc("GET /api/events/{id}", c.apiEvent)
	mux.HandleFunc("POST /api/events/replay", c.apiReplay)
	mux.HandleFunc("POST /events/replay", c.bulkReplayForm)
	mux.HandleFunc("POST /events/{id}/replay", c.replayOne)
	mux.HandleFunc("POST /api/providers/{provider}/pause", c.apiPause(false))
	mux.HandleFunc("POST /api/providers/{provider}/resume", c.apiPause(true))
	mux.HandleFunc("POST /providers/{provider}/pause", c.formPause(false))
	mux.HandleFunc("POST /providers/{provider}/resume", c.formPause(true))
}

// wake tells the workers there is work (a no-op without Config.Wake).
func (c *Console) wake(reason string) {
	if c.cfg.Wake != nil {
		c.cfg.Wake(reason)
	}
}

// urlQueryEscape escapes s for a query string.
func urlQueryEscape(s string) string { return url.QueryEscape(s) }
