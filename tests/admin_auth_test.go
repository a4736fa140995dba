package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// TestAdminLoginRedirectStaysOnConsole: whatever next holds (a tab, CR/LF,
// backslashes, encoded slashes, an absolute URL), after a real login the
// browser is sent to a path on the console, never another host; the login
// page's hidden field holds a console path too.
func TestAdminLoginRedirectStaysOnConsole(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	for _, next := range []string{
		"/\t/evil.example", "/\t\t/evil.example", "\t//evil.example", "/\r\n/evil.example", "/\n/evil.example",
		"/\\evil.example", "\\\\evil.example", "/\\/evil.example", "/%2F/evil.example", "/%2f%2fevil.example",
		"/%5C/evil.example", "//evil.example", "///evil.example", "https://evil.example/", "http:evil.example",
		" //evil.example", "/\x00/evil.example", "javascript:alert(1)",
	} {
		t.Run(fmt.Sprintf("%q", next), func(t *testing.T) {
			form := url.Values{"token": {testAdminToken}, "next": {next}}
			req, _ := http.NewRequest("POST", srv.Admin+"/login", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", srv.Admin)
			resp, err := noRedirect().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			h := resp.Header
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("login: %d, want 303", resp.StatusCode)
			}
			assertConsolePath(t, h.Get("Location"))
			// The browser's view: the Location resolved against the console.
			base, _ := url.Parse(srv.Admin + "/login")
			to, err := base.Parse(browserClean(h.Get("Location")))
			if err != nil || to.Host != base.Host {
				t.Fatalf("Location %q takes the browser to %v (%v)", h.Get("Location"), to, err)
			}
			_, _, body := adminDo(t, nil, "GET", srv.Admin+"/login?next="+url.QueryEscape(next), "", "", nil)
			i := strings.Index(body, `name="next" value="`)
			if i < 0 {
				t.Fatal("the login page has no next field")
			}
			v := body[i+len(`name="next" value="`):]
			v = v[:strings.IndexByte(v, '"')]
			assertConsolePath(t, strings.ReplaceAll(v, "&#43;", "+"))
		})
	}
}

// browserClean is what a browser's URL parser does first: it drops tabs
// and newlines anywhere and leading spaces, and reads a backslash as a
// slash.
func browserClean(loc string) string {
	loc = strings.NewReplacer("\t", "", "\r", "", "\n", "", "\\", "/").Replace(loc)
	return strings.TrimLeft(loc, " \x00")
}

// assertConsolePath fails unless loc is a path on the console itself, as a
// browser reads it.
func assertConsolePath(t *testing.T, loc string) {
	t.Helper()
	if b := browserClean(loc); !strings.HasPrefix(b, "/") || strings.HasPrefix(b, "//") {
		t.Fatalf("redirect target %q leaves the console (a browser reads %q)", loc, b)
	}
}

// TestAdminBehindTrustedProxy: behind a reverse proxy (every request from
// the proxy's address, the client in X-Forwarded-For), one client's bad
// guesses get that client 429 and nobody else; X-Forwarded-Proto: https
// from the proxy makes the session cookie Secure and __Host- prefixed.
// From a peer that is not a trusted proxy the same headers are ignored: a
// forged X-Forwarded-For earns no fresh attempts and no Secure cookie.
func TestAdminBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	// The test's requests come from 127.0.0.1: that is the "proxy".
	proxied := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken,
		AdminTrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}, sumeOnly)
	from := func(client string) map[string]string {
		return map[string]string{"X-Forwarded-For": "198.51.100.200, " + client, "X-Forwarded-Proto": "https"}
	}
	var codes []int
	for i := 0; i < 12; i++ {
		code, _, _ := adminDo(t, nil, "GET", proxied.Admin+"/api/status", fmt.Sprintf("guess-%02d-aaaaaaaaaaaa", i), "", from("203.0.113.7"))
		codes = append(codes, code)
	}
	if want := "[401 401 401 401 401 401 401 401 401 401 429 429]"; fmt.Sprint(codes) != want {
		t.Fatalf("the guesser's codes %v, want %s", codes, want)
	}
	if code, _, _ := adminDo(t, nil, "GET", proxied.Admin+"/api/status", testAdminToken, "", from("203.0.113.8")); code != 200 {
		t.Fatalf("another client behind the proxy with the token: %d, want 200 (not locked out by the guesser)", code)
	}
	if code, _, _ := adminDo(t, nil, "GET", proxied.Admin+"/api/status", "wrong-but-first-try-aaaa", "", from("203.0.113.9")); code != 401 {
		t.Fatalf("a third client's first wrong token: %d, want 401", code)
	}
	if code, _, _ := adminDo(t, nil, "GET", proxied.Admin+"/api/status", testAdminToken, "", from("203.0.113.7")); code != 429 {
		t.Fatalf("the guesser with the right token: %d, want 429", code)
	}
	// The login form through the proxy over https: a Secure __Host- cookie
	// that the console takes back over https.
	ck := loginCookie(t, proxied.Admin, from("203.0.113.8"))
	if ck.Name != "__Host-pginbox_session" || !ck.Secure || ck.Path != "/" || ck.Domain != "" || !ck.HttpOnly {
		t.Fatalf("cookie via a trusted https proxy: %+v, want __Host-pginbox_session, Secure, Path=/, no Domain, HttpOnly", ck)
	}
	hdr := from("203.0.113.8")
	hdr["Cookie"] = ck.Name + "=" + ck.Value
	if code, _, _ := adminDo(t, nil, "GET", proxied.Admin+"/api/status", "", "", hdr); code != 200 {
		t.Fatalf("the __Host- session over https: %d, want 200", code)
	}

	// A listener whose trusted proxies do not include the test's address:
	// X-Forwarded-For is the client's own say and is ignored.
	direct := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken,
		AdminTrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, sumeOnly)
	codes = codes[:0]
	for i := 0; i < 12; i++ {
		forged := map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i+1), "X-Forwarded-Proto": "https"}
		code, _, _ := adminDo(t, nil, "GET", direct.Admin+"/api/status", fmt.Sprintf("guess-%02d-aaaaaaaaaaaa", i), "", forged)
		codes = append(codes, code)
	}
	if want := "[401 401 401 401 401 401 401 401 401 401 429 429]"; fmt.Sprint(codes) != want {
		t.Fatalf("forged X-Forwarded-For from an untrusted peer: codes %v, want %s", codes, want)
	}
	plain := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken,
		AdminTrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, sumeOnly)
	ck = loginCookie(t, plain.Admin, map[string]string{"X-Forwarded-Proto": "https"})
	if ck.Name != "pginbox_session" || ck.Secure {
		t.Fatalf("cookie over plain http with a forged X-Forwarded-Proto: %+v, want pginbox_session, not Secure", ck)
	}
}

// loginCookie logs in through the form with extra headers and returns the
// session cookie.
func loginCookie(t *testing.T, admin string, hdr map[string]string) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest("POST", admin+"/login", strings.NewReader(url.Values{"token": {testAdminToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", admin)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if strings.HasSuffix(c.Name, "pginbox_session") {
			return c
		}
	}
	t.Fatalf("login set no cookie (%d)", resp.StatusCode)
	return nil
}

// TestAdminSignOutEverywhere: POST /logout/everywhere (the token or a
// session, from the console's origin) ends every session at once, long
// before their 12 hours; the token still works and a new login too. POST
// /logout and /logout/everywhere from another origin are refused.
func TestAdminSignOutEverywhere(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	a, b := login(t, srv.Admin), login(t, srv.Admin)
	for _, path := range []string{"/logout", "/logout/everywhere"} {
		code, h, _ := adminDo(t, nil, "POST", srv.Admin+path, "", "", map[string]string{"Cookie": a, "Origin": "https://evil.example"})
		if code != http.StatusForbidden || h.Get("Set-Cookie") != "" {
			t.Fatalf("POST %s from another origin: %d, Set-Cookie %q; want 403 and nothing cleared", path, code, h.Get("Set-Cookie"))
		}
	}
	if code, _, _ := adminDo(t, nil, "POST", srv.Admin+"/logout/everywhere", "", "", nil); code != 401 {
		t.Fatalf("sign out everywhere without a credential: %d, want 401", code)
	}
	for _, s := range []string{a, b} {
		if code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/api/status", "", "", map[string]string{"Cookie": s}); code != 200 {
			t.Fatalf("a session before sign-out: %d, want 200", code)
		}
	}
	code, h, _ := adminDo(t, nil, "POST", srv.Admin+"/logout/everywhere", "", "", map[string]string{"Cookie": a, "Origin": srv.Admin})
	if code != http.StatusSeeOther || h.Get("Location") != "/login" {
		t.Fatalf("sign out everywhere: %d → %q, want 303 → /login", code, h.Get("Location"))
	}
	for _, s := range []string{a, b} {
		if code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/api/status", "", "", map[string]string{"Cookie": s}); code != 401 {
			t.Fatalf("a session after sign-out everywhere: %d, want 401", code)
		}
	}
	if code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/api/status", testAdminToken, "", nil); code != 200 {
		t.Fatalf("the token after sign-out everywhere: %d, want 200", code)
	}
	c := login(t, srv.Admin)
	if code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/api/status", "", "", map[string]string{"Cookie": c}); code != 200 {
		t.Fatalf("a new session: %d, want 200", code)
	}
	// With the Bearer token (a script), no Origin needed.
	if code, _, _ := adminDo(t, nil, "POST", srv.Admin+"/logout/everywhere", testAdminToken, "", nil); code != http.StatusSeeOther {
		t.Fatalf("sign out everywhere with the token: %d, want 303", code)
	}
	if code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/api/status", "", "", map[string]string{"Cookie": c}); code != 401 {
		t.Fatalf("a session after the second sign-out: %d, want 401", code)
	}
}

// logBuffer collects a server's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestAdminBadFilterValuesAre400: every filter value Postgres would refuse
// (text after the payload object, \u0000, lone surrogates, exponents past
// numeric's range, NUL or invalid UTF-8 in a text field, a tampered
// cursor) answers 400 with a message on /api/events, /events, the replay
// API and the bulk replay form, never 503, and logs no warning.
func TestAdminBadFilterValuesAre400(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	logs := &logBuffer{}
	srv, err := runner.New(context.Background(), runner.Config{Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: testAdminToken,
		ReconcileEvery: -1, ChecksEvery: -1}, conf.URL(), slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("server did not stop")
		}
	})
	admin := "http://" + srv.AdminAddr().String()
	cur := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := []struct {
		name  string
		param string
		value string
		json  string // the same value in a replay filter, "" when JSON cannot carry it
	}{
		{"payload with a second closing brace", "payload", `{"a":1}}`, ""},
		{"payload with \\u0000", "payload", `{"a":"\u0000"}`, `{"payload": {"a":"\u0000"}}`},
		{"payload key with \\u0000", "payload", `{"\u0000":1}`, `{"payload": {"\u0000":1}}`},
		{"payload with a lone high surrogate", "payload", `{"a":"\ud800"}`, `{"payload": {"a":"\ud800"}}`},
		{"payload with a lone low surrogate", "payload", `{"a":"\udfff"}`, `{"payload": {"a":"\udfff"}}`},
		{"payload with a huge exponent", "payload", `{"a":1e200000}`, `{"payload": {"a":1e200000}}`},
		{"payload with a tiny exponent", "payload", `{"a":1e-20000}`, `{"payload": {"a":1e-20000}}`},
		{"payload with invalid UTF-8", "payload", "{\"a\":\"\xff\"}", ""},
		{"provider with NUL", "provider", "sume\x00", `{"provider": "sume\u0000"}`},
		{"event_type with invalid UTF-8", "event_type", "job.\xc3", ""},
		{"external_id with NUL", "external_id", "\x00", `{"external_id": "\u0000"}`},
		{"source with NUL", "source", "back\x00fill", `{"source": "back\u0000fill"}`},
		{"cursor far in the future", "cursor", cur("v1.9223372036854775807.1"), ""},
		{"cursor far in the past", "cursor", cur("v1.-9223372036854775808.1"), ""},
		{"cursor past year 9999", "cursor", cur("v1.253402300800000000.1"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{tc.param: {tc.value}}.Encode()
			code, _, body := adminDo(t, nil, "GET", admin+"/api/events?"+q, testAdminToken, "", nil)
			if code != 400 || !strings.Contains(body, `"error"`) || strings.Contains(body, "database unavailable") {
				t.Errorf("GET /api/events?%s: %d %s, want 400 with a message", q, code, body)
			}
			code, _, body = adminDo(t, nil, "GET", admin+"/events?"+q, testAdminToken, "", nil)
			if code != 400 || !strings.Contains(body, tc.param) && !strings.Contains(body, "filter value") {
				t.Errorf("GET /events?%s: %d, want 400 with a message:\n%.300s", q, code, body)
			}
			if tc.param != "cursor" {
				form := url.Values{tc.param: {tc.value}, "reason": {"retry"}, "since": {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}
				req, _ := http.NewRequest("POST", admin+"/events/replay", strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Authorization", "Bearer "+testAdminToken)
				resp, err := noRedirect().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 400 {
					t.Errorf("POST /events/replay with %s: %d (%s), want 400", tc.param, resp.StatusCode, resp.Header.Get("Location"))
				}
			}
			if tc.json != "" {
				body := `{"filter": ` + tc.json + `, "reason": "retry"}`
				code, _, out := adminDo(t, nil, "POST", admin+"/api/events/replay", testAdminToken, body, nil)
				if code != 400 || !strings.Contains(out, `"error"`) {
					t.Errorf("POST /api/events/replay %s: %d %s, want 400 with a message", body, code, out)
				}
			}
		})
	}
	// Values near those limits that Postgres takes are still searched.
	for _, good := range []string{`{"a":1e-1001}`, `{"a":1e400}`, `{"a":"\ud83d\ude00"}`, `{"a":"\\u0000"}`} {
		q := url.Values{"payload": {good}}.Encode()
		if code, _, body := adminDo(t, nil, "GET", admin+"/api/events?"+q, testAdminToken, "", nil); code != 200 {
			t.Errorf("GET /api/events?%s: %d %s, want 200", q, code, body)
		}
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Errorf("a bad filter value logged: %s", line)
		}
	}
}

// TestEventsPageOffersBulkReplayOnlyForAFilter: with no filter set the
// events page offers no bulk replay (the POST would be refused: replaying
// every event is never one click) and says why; with a filter it offers
// the count-first button. The header offers signing out everywhere.
func TestEventsPageOffersBulkReplayOnlyForAFilter(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	for _, tc := range []struct {
		query            string
		offer, needsSome bool
	}{
		{"", false, true},
		{"?status=dead", true, false},
		{"?status=&provider=", false, true},
	} {
		code, _, body := adminDo(t, nil, "GET", srv.Admin+"/events"+tc.query, testAdminToken, "", nil)
		if code != 200 {
			t.Fatalf("GET /events%s: %d", tc.query, code)
		}
		if got := strings.Contains(body, `id="bulk-count-button"`); got != tc.offer {
			t.Errorf("GET /events%s offers the bulk replay: %v, want %v", tc.query, got, tc.offer)
		}
		if got := strings.Contains(body, `id="bulk-needs-filter"`); got != tc.needsSome {
			t.Errorf("GET /events%s asks for a filter: %v, want %v", tc.query, got, tc.needsSome)
		}
		if !strings.Contains(body, `action="/logout/everywhere"`) {
			t.Errorf("GET /events%s: the header offers no sign-out everywhere", tc.query)
		}
	}
}
