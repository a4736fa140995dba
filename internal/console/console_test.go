package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// newTestConsole builds a console on a pool that never connects (nothing
// listens on port 1): enough for the routes that read no database.
func newTestConsole(t *testing.T, token string) *Console {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://pginbox@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	probe := func(body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) })
	}
	c, err := New(Config{Pool: pool, Token: token, Addr: "127.0.0.1:9090", Hosts: []string{"console.example"},
		Metrics: probe("metrics"), Healthz: probe("healthz"), Readyz: probe("readyz")})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNewNeedsAPool: New refuses a config without a pool.
func TestNewNeedsAPool(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a pool: want an error")
	}
}

// TestHandlerGuards: the probes and /metrics pass through from any Host;
// every other route needs a Host the listener goes by and, with a token,
// the token; actions need a token configured; every answer past the Host
// check carries the security headers.
func TestHandlerGuards(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		token    string
		method   string
		path     string
		host     string
		auth     string
		want     int
		wantBody string
		wantLoc  string
	}{
		{name: "healthz from any host", method: "GET", path: "/healthz", host: "10.1.2.3:9090", want: 200, wantBody: "healthz"},
		{name: "readyz from any host", token: "t", method: "GET", path: "/readyz", host: "10.1.2.3", want: 200, wantBody: "readyz"},
		{name: "metrics without the token", token: "t", method: "GET", path: "/metrics", host: "evil.example", want: 200, wantBody: "metrics"},
		{name: "unknown host refused", method: "GET", path: "/events", host: "evil.example", want: http.StatusMisdirectedRequest},
		{name: "an extra host is served", method: "GET", path: "/console.js", host: "console.example", want: 200},
		{name: "the listen address's host is served", method: "GET", path: "/console.js", host: "127.0.0.1:9090", want: 200},
		{name: "actions need a token configured", method: "POST", path: "/api/events/replay", host: "localhost", want: 403},
		{name: "api needs the token", token: "t", method: "GET", path: "/api/status", host: "localhost", want: 401},
		{name: "a wrong token is refused", token: "t", method: "GET", path: "/api/status", host: "localhost", auth: "Bearer x", want: 401},
		{name: "pages redirect to the login", token: "t", method: "GET", path: "/events?status=dead", host: "localhost", want: 303,
			wantLoc: "/login?next=%2Fevents%3Fstatus%3Ddead"},
		{name: "the login page is open", token: "t", method: "GET", path: "/login", host: "localhost", want: 200, wantBody: "Admin token"},
		{name: "the script with the token", token: "t", method: "GET", path: "/console.js", host: "localhost", auth: "Bearer t", want: 200,
			wantBody: "pginbox console"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newTestConsole(t, tc.token).Handler()
			r := httptest.NewRequest(tc.method, tc.path, nil)
			r.Host = tc.host
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%s %s: status %d, want %d: %s", tc.method, tc.path, w.Code, tc.want, w.Body)
			}
			if !strings.Contains(w.Body.String(), tc.wantBody) {
				t.Errorf("body %q does not contain %q", w.Body, tc.wantBody)
			}
			if got := w.Header().Get("Location"); tc.wantLoc != "" && got != tc.wantLoc {
				t.Errorf("Location %q, want %q", got, tc.wantLoc)
			}
			// The Host check answers before the security headers are set.
			if got := w.Header().Get("X-Frame-Options"); w.Code != http.StatusMisdirectedRequest && got != "DENY" {
				t.Errorf("X-Frame-Options %q, want DENY", got)
			}
		})
	}
}

// TestLogoutNeedsSameOrigin: POST /logout from another origin (or with no
// Origin or Referer) is refused and clears nothing; from the console's
// own origin it clears the cookie.
func TestLogoutNeedsSameOrigin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		hdr    map[string]string
		want   int
		clears bool
	}{
		{"another origin", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden, false},
		{"another referer", map[string]string{"Referer": "http://evil.example/x"}, http.StatusForbidden, false},
		{"cross-site fetch", map[string]string{"Origin": "http://localhost:9090", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, false},
		{"neither", map[string]string{}, http.StatusForbidden, false},
		{"same origin", map[string]string{"Origin": "http://localhost:9090"}, http.StatusSeeOther, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newTestConsole(t, "t").Handler()
			r := httptest.NewRequest("POST", "/logout", nil)
			r.Host = "localhost:9090"
			for k, v := range tc.hdr {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("POST /logout: %d, want %d", w.Code, tc.want)
			}
			if cleared := strings.Contains(w.Header().Get("Set-Cookie"), "pginbox_session="); cleared != tc.clears {
				t.Fatalf("Set-Cookie %q: cleared %t, want %t", w.Header().Get("Set-Cookie"), cleared, tc.clears)
			}
		})
	}
}
