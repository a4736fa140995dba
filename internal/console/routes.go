package console

import (
	"net/http"
)

// routes is the operators' listener: the console, /api/*, /metrics,
// /healthz and /readyz. Every route but the last three passes the Host
// check and, with a token configured, needs it; actions (POST) need a token
// configured at all.
func (c *Console) routes() http.Handler {
	guarded := http.NewServeMux()
	guarded.HandleFunc("GET /api/status", c.apiStatus)
	guarded.HandleFunc("GET /{$}", c.dashboard)
	guarded.HandleFunc("POST /logout/everywhere", c.logoutEverywhere)
	c.consoleRoutes(guarded)

	mux := http.NewServeMux()
	for pattern, h := range map[string]http.Handler{
		"GET /healthz": c.cfg.Healthz, "GET /readyz": c.cfg.Readyz, "GET /metrics": c.cfg.Metrics,
	} {
		if h != nil {
			mux.Handle(pattern, h)
		}
	}
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.logout)
	mux.Handle("/", c.guard(guarded))
	return c.hostCheck(securityHeaders(mux))
}

// hostCheck refuses a Host this listener does not go by (DNS rebinding:
// a hostile page whose name now resolves to 127.0.0.1 sends its own name).
// Probes and scrapes (/healthz, /readyz, /metrics) carry no secrets and are
// reached by IP from orchestrators, so they are exempt.
func (c *Console) hostCheck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
		default:
			if !c.auth.HostAllowed(r) {
				c.log.Warn("admin request refused: unknown Host", "host", r.Host, "remote", r.RemoteAddr)
				http.Error(w, "misdirected request: this Host is not served here (PGINBOX_ADMIN_HOSTS lists extra names)", http.StatusMisdirectedRequest)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// securityHeaders sets the listener's CSP, framing, sniffing, referrer and
// caching headers on every answer.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}
