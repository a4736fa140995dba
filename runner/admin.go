package runner

import (
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// adminRoutes is the operators' listener: the console, /api/*, /metrics,
// /healthz and /readyz. Every route but the last three passes the Host
// check and, with a token configured, needs it; actions (POST) need a token
// configured at all.
func (s *Server) adminRoutes() http.Handler {
	guarded := http.NewServeMux()
	guarded.HandleFunc("GET /api/status", s.apiStatus)
	guarded.HandleFunc("GET /{$}", s.dashboard)
	s.consoleRoutes(guarded)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	// A gauge read from the database fails while the database is down;
	// the scrape still answers 200 with every other metric (the moment an
	// on-call engineer needs them most) and logs what it left out.
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      scrapeLog{s.log},
	}))
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)
	mux.Handle("/", s.guard(guarded))
	return s.hostCheck(securityHeaders(mux))
}

// hostCheck refuses a Host this listener does not go by (DNS rebinding:
// a hostile page whose name now resolves to 127.0.0.1 sends its own name).
// Probes and scrapes (/healthz, /readyz, /metrics) carry no secrets and are
// reached by IP from orchestrators, so they are exempt.
func (s *Server) hostCheck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
		default:
			if !s.auth.hostAllowed(r) {
				s.log.Warn("admin request refused: unknown Host", "host", r.Host, "remote", r.RemoteAddr)
				http.Error(w, "misdirected request: this Host is not served here (PGINBOX_ADMIN_HOSTS lists extra names)", http.StatusMisdirectedRequest)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

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

// guard enforces the token rules on the console and /api/*.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api := strings.HasPrefix(r.URL.Path, "/api/")
		action := r.Method == http.MethodPost
		if s.auth.token == "" {
			if action {
				refuse(w, api, http.StatusForbidden, "actions are disabled: set PGINBOX_ADMIN_TOKEN to enable them")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		ip := clientIP(r)
		cred, cookie := s.auth.check(r)
		// A valid session cookie is never refused: it is an HMAC under a
		// per-process key, nothing anyone can guess, so an operator who is
		// logged in keeps the console while someone else guesses tokens.
		if !(cred == credValid && cookie) {
			wait, ticket := s.auth.limiter.admit(ip, time.Now())
			if wait > 0 {
				tooMany(w, api, wait)
				return
			}
			if cred != credWrong {
				s.auth.limiter.refund(ip, ticket)
			}
		}
		switch cred {
		case credWrong:
			s.log.Warn("admin request refused: wrong token or session", "remote", r.RemoteAddr, "path", r.URL.Path)
			fallthrough
		case credNone:
			if api || action {
				w.Header().Set("WWW-Authenticate", `Bearer realm="pginbox"`)
				refuse(w, api, http.StatusUnauthorized, "the admin token is required (Authorization: Bearer <token>, or log in at /login)")
				return
			}
			http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if action && cookie && !sameOrigin(r) {
			s.log.Warn("admin action refused: cross-site request", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"))
			refuse(w, api, http.StatusForbidden, "cross-site request refused")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func refuse(w http.ResponseWriter, api bool, code int, msg string) {
	if api {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	http.Error(w, msg, code)
}

func tooMany(w http.ResponseWriter, api bool, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)))
	refuse(w, api, http.StatusTooManyRequests, "too many failed logins: try again later")
}

var loginTmpl = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · pginbox</title><style>` + baseCSS + `
main.login { max-width:24rem; margin:12vh auto; padding:0 1rem; }
.login form { display:grid; gap:.6rem; }
</style></head>
<body><main class="login"><section class="card">
<h1>pginbox</h1>
{{if .NoToken}}<p>No admin token is configured: the console is read-only and open on this listener. <a href="/">Open the console</a>.</p>
{{else}}
{{if .Wrong}}<p class="flash bad" role="alert">That token is not right.</p>{{end}}
<form method="post" action="/login">
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="{{.Next}}">
<button class="primary">Log in</button>
</form>{{end}}
</section></main></body></html>`))

type loginData struct {
	NoToken bool
	Wrong   bool
	Next    string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginTmpl.Execute(w, loginData{NoToken: s.auth.token == "", Next: localPath(r.URL.Query().Get("next"))})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.auth.token == "" {
		http.Error(w, "no admin token is configured", http.StatusForbidden)
		return
	}
	ip := clientIP(r)
	wait, ticket := s.auth.limiter.admit(ip, time.Now())
	if wait > 0 {
		tooMany(w, false, wait)
		return
	}
	if !sameOrigin(r) {
		s.auth.limiter.refund(ip, ticket)
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.auth.limiter.refund(ip, ticket)
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	next := localPath(r.PostForm.Get("next"))
	if !s.auth.tokenOK(r.PostForm.Get("token")) {
		s.log.Warn("admin login refused: wrong token", "remote", r.RemoteAddr)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_ = loginTmpl.Execute(w, loginData{Wrong: true, Next: next})
		return
	}
	s.auth.limiter.refund(ip, ticket)
	v, exp := s.auth.newSession()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: "/", Expires: exp, MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	s.log.Info("admin login", "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// localPath keeps a redirect target on this site: a path, never "//host"
// or a scheme.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") {
		return "/"
	}
	return p
}

// scrapeLog passes promhttp's scrape errors to the server's logger.
type scrapeLog struct{ log *slog.Logger }

// Println logs one scrape error.
func (l scrapeLog) Println(v ...any) {
	l.log.Warn("metrics scrape: a collector failed; serving the others", "error", fmt.Sprint(v...))
}
