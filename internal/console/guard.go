package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/console/auth"
)

// guard enforces the token rules on the console and /api/*.
func (c *Console) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api := strings.HasPrefix(r.URL.Path, "/api/")
		action := r.Method == http.MethodPost
		if !c.auth.HasToken() {
			if action {
				refuse(w, api, http.StatusForbidden, "actions are disabled: set PGINBOX_ADMIN_TOKEN to enable them")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		ip, _ := c.auth.Client(r)
		cred, cookie := c.auth.Check(r)
		// A valid session cookie is never refused: it is an HMAC under a
		// per-process key, nothing anyone can guess, so an operator who is
		// logged in keeps the console while someone else guesses tokens.
		if !(cred == auth.Valid && cookie) {
			wait, ticket := c.auth.Admit(ip)
			if wait > 0 {
				tooMany(w, api, wait)
				return
			}
			if cred != auth.Wrong {
				c.auth.Refund(ip, ticket)
			}
		}
		switch cred {
		case auth.Wrong:
			c.log.Warn("admin request refused: wrong token or session", "remote", r.RemoteAddr, "client", ip, "path", r.URL.Path)
			fallthrough
		case auth.None:
			if api || action {
				w.Header().Set("WWW-Authenticate", `Bearer realm="pginbox"`)
				refuse(w, api, http.StatusUnauthorized, "the admin token is required (Authorization: Bearer <token>, or log in at /login)")
				return
			}
			http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if action && cookie && !auth.SameOrigin(r) {
			c.log.Warn("admin action refused: cross-site request", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"))
			refuse(w, api, http.StatusForbidden, "cross-site request refused")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers code with msg: JSON on /api/, text elsewhere.
func refuse(w http.ResponseWriter, api bool, code int, msg string) {
	if api {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	http.Error(w, msg, code)
}

// tooMany answers 429 with a Retry-After of wait.
func tooMany(w http.ResponseWriter, api bool, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)))
	refuse(w, api, http.StatusTooManyRequests, "too many failed logins: try again later")
}
