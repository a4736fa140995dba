package console

import (
	"html/template"
	"net/http"
	"strings"
	"time"
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
	_ = loginTmpl.Execute(w, loginData{NoToken: c.auth.token == "", Next: localPath(r.URL.Query().Get("next"))})
}

// login is POST /login: the token for a session cookie, then back to
// next.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.auth.token == "" {
		http.Error(w, "no admin token is configured", http.StatusForbidden)
		return
	}
	ip := clientIP(r)
	wait, ticket := c.auth.limiter.admit(ip, c.now())
	if wait > 0 {
		tooMany(w, false, wait)
		return
	}
	if !sameOrigin(r) {
		c.auth.limiter.refund(ip, ticket)
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		c.auth.limiter.refund(ip, ticket)
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	next := localPath(r.PostForm.Get("next"))
	if !c.auth.tokenOK(r.PostForm.Get("token")) {
		c.log.Warn("admin login refused: wrong token", "remote", r.RemoteAddr)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_ = loginTmpl.Execute(w, loginData{Wrong: true, Next: next})
		return
	}
	c.auth.limiter.refund(ip, ticket)
	v, exp := c.auth.newSession()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: "/", Expires: exp, MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	c.log.Info("admin login", "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout is POST /logout: it drops the session cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
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
