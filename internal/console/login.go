package console

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/console/auth"
)

// loginTmpl is the login page.
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

// loginData is what the login page shows.
type loginData struct {
	NoToken bool
	Wrong   bool
	Next    string
}

// loginPage is GET /login.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginTmpl.Execute(w, loginData{NoToken: !c.auth.HasToken(), Next: localPath(r.URL.Query().Get("next"))})
}

// login is POST /login: the token for a session cookie, then back to
// next.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !c.auth.HasToken() {
		http.Error(w, "no admin token is configured", http.StatusForbidden)
		return
	}
	ip, _ := c.auth.Client(r)
	wait, ticket := c.auth.Admit(ip)
	if wait > 0 {
		tooMany(w, false, wait)
		return
	}
	if !auth.SameOrigin(r) {
		c.auth.Refund(ip, ticket)
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		c.auth.Refund(ip, ticket)
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	next := localPath(r.PostForm.Get("next"))
	if !c.auth.TokenOK(r.PostForm.Get("token")) {
		c.log.Warn("admin login refused: wrong token", "remote", r.RemoteAddr, "client", ip)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_ = loginTmpl.Execute(w, loginData{Wrong: true, Next: next})
		return
	}
	c.auth.Refund(ip, ticket)
	v, exp := c.auth.NewSession()
	http.SetCookie(w, c.auth.Cookie(r, v, exp, int(auth.SessionTTL/time.Second)))
	c.log.Info("admin login", "remote", r.RemoteAddr, "client", ip)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout is POST /logout: it drops this browser's session cookie. Like
// every other POST it must come from the console's own origin, so another
// site cannot log an operator out.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if !auth.SameOrigin(r) {
		ip, _ := c.auth.Client(r)
		c.log.Warn("admin logout refused: cross-site request", "remote", r.RemoteAddr, "client", ip, "origin", r.Header.Get("Origin"))
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	http.SetCookie(w, c.auth.Cookie(r, "", time.Time{}, -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// logoutEverywhere is POST /logout/everywhere (behind the guard: the token
// or a session, from the console's origin): it draws a new session key, so
// every session cookie issued so far, in every browser, stops working
// before its 12 hours are up; the token itself still works.
func (c *Console) logoutEverywhere(w http.ResponseWriter, r *http.Request) {
	if err := c.auth.RotateKey(); err != nil {
		c.log.Error("admin sign out everywhere failed", "error", err)
		http.Error(w, "could not revoke the sessions", http.StatusInternalServerError)
		return
	}
	ip, _ := c.auth.Client(r)
	c.log.Info("admin sessions revoked: every session cookie is invalid", "remote", r.RemoteAddr, "client", ip)
	http.SetCookie(w, c.auth.Cookie(r, "", time.Time{}, -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// localPath keeps a redirect target on this console: a path, whatever p
// holds. Browsers drop tabs and newlines inside a URL and read a backslash
// as a slash, so "/\t/evil.example" or "/\\evil.example" would become
// "//evil.example", another host; http.Redirect does not clean a target
// it cannot parse. So p must be printable ASCII without a backslash (what
// RequestURI gives), parse as a bare path with no scheme, host or user,
// and neither it nor its decoded path may start with "//" (nor hold a
// decoded backslash); anything else is "/". The answer is rebuilt from
// the parsed path and query.
func localPath(p string) string {
	for i := 0; i < len(p); i++ {
		if b := p[i]; b <= ' ' || b >= 0x7f || b == '\\' {
			return "/"
		}
	}
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") || strings.ContainsAny(u.Path, "\\\t\r\n") {
		return "/"
	}
	out := u.EscapedPath()
	if !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") {
		return "/"
	}
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out
}
