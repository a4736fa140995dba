package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/runner"
)

const testAdminToken = "test-admin-token-0123456789"

// adminDo sends a request to the admin listener with optional bearer token
// and headers, returning status, headers and body.
func adminDo(t *testing.T, client *http.Client, method, u, token, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if client == nil {
		client = noRedirect()
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func noRedirect() *http.Client {
	return &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// TestAdminRoutesOnlyOnAdminListener: the public listener serves the
// webhooks and the probes, nothing an operator reads; the admin listener
// serves those.
func TestAdminRoutesOnlyOnAdminListener(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	for _, path := range []string{"/", "/api/status", "/metrics", "/events", "/api/events", "/login", "/events/1", "/api/events/1"} {
		if code, _, _ := adminDo(t, nil, "GET", srv.Base+path, "", "", nil); code != http.StatusNotFound {
			t.Errorf("public GET %s: %d, want 404", path, code)
		}
	}
	for _, path := range []string{"/api/events/replay", "/events/1/replay", "/actions/replay"} {
		if code, _, _ := adminDo(t, nil, "POST", srv.Base+path, "", `{"ids":[1],"reason":"x"}`, nil); code != http.StatusNotFound {
			t.Errorf("public POST %s: %d, want 404", path, code)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		for _, base := range []string{srv.Base, srv.Admin} {
			if code, _, _ := adminDo(t, nil, "GET", base+path, "", "", nil); code != 200 {
				t.Errorf("GET %s%s: %d", base, path, code)
			}
		}
	}
	for _, path := range []string{"/", "/api/status", "/metrics"} {
		if code, _, _ := adminDo(t, nil, "GET", srv.Admin+path, "", "", nil); code != 200 {
			t.Errorf("admin GET %s: %d, want 200", path, code)
		}
	}
	off := startServer(t, conf.URL(), runner.Config{AdminAddr: "off"}, sumeOnly)
	if off.Admin != "" {
		t.Fatalf("AdminAddr off still listens at %s", off.Admin)
	}
}

// TestAdminTokenGuardsConsole: with a token, every admin route but the
// probes and /metrics needs it; the login form sets an HttpOnly,
// SameSite=Strict cookie that is not the token.
func TestAdminTokenGuardsConsole(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	for _, path := range []string{"/api/status", "/api/events", "/api/events/1"} {
		code, h, _ := adminDo(t, nil, "GET", srv.Admin+path, "", "", nil)
		if code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("GET %s without token: %d, want 401 with WWW-Authenticate", path, code)
		}
		if code, _, _ := adminDo(t, nil, "GET", srv.Admin+path, testAdminToken+"x", "", nil); code != 401 {
			t.Errorf("GET %s with a wrong token: %d, want 401", path, code)
		}
	}
	for _, path := range []string{"/", "/events", "/events/1"} {
		code, h, _ := adminDo(t, nil, "GET", srv.Admin+path, "", "", nil)
		if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/login") {
			t.Errorf("GET %s without token: %d → %q, want a redirect to /login", path, code, h.Get("Location"))
		}
	}
	if code, _, body := adminDo(t, nil, "GET", srv.Admin+"/api/status", testAdminToken, "", nil); code != 200 || !strings.Contains(body, `"queue"`) {
		t.Fatalf("GET /api/status with the token: %d %s", code, body)
	}
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, _, _ := adminDo(t, nil, "GET", srv.Admin+path, "", "", nil); code != 200 {
			t.Errorf("GET %s: %d, want 200 without a token", path, code)
		}
	}
	// The login form.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	form := url.Values{"token": {testAdminToken}, "next": {"/api/status"}}
	req, _ := http.NewRequest("POST", srv.Admin+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.Admin)
	resp, err := noRedirect().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/api/status" {
		t.Fatalf("login: %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "pginbox_session" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.MaxAge <= 0 {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, an expiry", session)
	}
	if strings.Contains(session.Value, testAdminToken) {
		t.Fatal("the session cookie carries the token itself")
	}
	u, _ := url.Parse(srv.Admin)
	jar.SetCookies(u, []*http.Cookie{session})
	if r, err := browser.Get(srv.Admin + "/"); err != nil || r.StatusCode != 200 {
		t.Fatalf("GET / with the session: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	// A forged session (another expiry with the same MAC) is refused.
	exp, mac, _ := strings.Cut(session.Value, ".")
	forged := fmt.Sprint(len(exp)) + "9" + "." + mac
	code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/api/status", "", "", map[string]string{"Cookie": "pginbox_session=" + forged})
	if code != 401 {
		t.Fatalf("forged session: %d, want 401", code)
	}
	// A wrong token at the login form.
	form.Set("token", "not-the-token-at-all")
	req, _ = http.NewRequest("POST", srv.Admin+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.Admin)
	resp, err = noRedirect().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || len(resp.Cookies()) != 0 {
		t.Fatalf("login with a wrong token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
}

// TestAdminTokenGuessingIsRateLimited: after 10 wrong tokens in a minute
// from one address, every attempt (even the right token) answers 429 with
// Retry-After — except one with a valid session cookie.
func TestAdminTokenGuessingIsRateLimited(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	session := login(t, srv.Admin)
	var codes []int
	for i := 0; i < 12; i++ {
		code, h, _ := adminDo(t, nil, "GET", srv.Admin+"/api/status", fmt.Sprintf("guess-%02d-aaaaaaaaaaaa", i), "", nil)
		codes = append(codes, code)
		if code == 429 && h.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	want := []int{401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 429, 429}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	if code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/api/status", testAdminToken, "", nil); code != 429 {
		t.Fatalf("the right token while blocked: %d, want 429 (else guessing goes on)", code)
	}
	code, _, _ := adminDo(t, nil, "POST", srv.Admin+"/login", "", "token="+testAdminToken,
		map[string]string{"Origin": srv.Admin, "Content-Type": "application/x-www-form-urlencoded"})
	if code != 429 {
		t.Fatalf("the login form while blocked: %d, want 429", code)
	}
	// A session from before the guessing is not refused: nothing in it
	// can be guessed, and the operator keeps the console.
	if code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/api/status", "", "", map[string]string{"Cookie": session}); code != 200 {
		t.Fatalf("a valid session while the address is blocked: %d, want 200", code)
	}
	if code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/api/status", "", "", map[string]string{"Cookie": "pginbox_session=9999999999.00"}); code != 429 {
		t.Fatalf("a forged session while blocked: %d, want 429", code)
	}
}

// TestAdminActionsNeedTokenAndSameOrigin: without a token configured every
// action is 403; with one, a cookie-authenticated action from another
// origin (or with no Origin/Referer) is 403, a same-origin one runs.
func TestAdminActionsNeedTokenAndSameOrigin(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	dead := deadEvent(t, pool, "job_csrf")
	open := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	body := fmt.Sprintf(`{"ids": [%d], "reason": "handler fixed"}`, dead)
	if code, _, _ := adminDo(t, nil, "POST", open.Admin+"/api/events/replay", "", body, nil); code != 403 {
		t.Fatalf("action without a configured token: %d, want 403", code)
	}
	if code, _, _ := adminDo(t, nil, "POST", open.Admin+"/events/1/replay", "", "", nil); code != 403 {
		t.Fatalf("form action without a configured token: %d, want 403", code)
	}
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	cookie := login(t, srv.Admin)
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"cross-site origin", map[string]string{"Origin": "https://evil.example"}, 403},
		{"cross-site referer", map[string]string{"Referer": "https://evil.example/page"}, 403},
		{"sec-fetch-site cross-site", map[string]string{"Origin": srv.Admin, "Sec-Fetch-Site": "cross-site"}, 403},
		{"no origin, no referer", map[string]string{}, 403},
		{"same origin", map[string]string{"Origin": srv.Admin}, 200},
	} {
		tc.hdr["Cookie"] = cookie
		code, _, out := adminDo(t, nil, "POST", srv.Admin+"/api/events/replay", "", body, tc.hdr)
		if code != tc.want {
			t.Fatalf("%s: %d %s, want %d", tc.name, code, out, tc.want)
		}
		n := queryInt(t, pool, `SELECT count(*) FROM webhooks.replays WHERE event_id = $1`, dead)
		if (tc.want == 200) != (n == 1) {
			t.Fatalf("%s: %d replays recorded", tc.name, n)
		}
	}
	// Bearer calls carry no ambient credential: no Origin needed.
	execSQL(t, pool, `UPDATE webhooks.events SET status = 'dead', last_error = 'x' WHERE id = $1`, dead)
	code, _, out := adminDo(t, nil, "POST", srv.Admin+"/api/events/replay", testAdminToken, body, nil)
	if code != 200 || !strings.Contains(out, `"replayed":1`) {
		t.Fatalf("bearer replay: %d %s", code, out)
	}
	for _, bad := range []string{`{"ids": [1]}`, `{"ids": [1], "reason": "  "}`, `{"reason": "x"}`, `not json`} {
		if code, _, out := adminDo(t, nil, "POST", srv.Admin+"/api/events/replay", testAdminToken, bad, nil); code != 400 {
			t.Errorf("replay %s: %d %s, want 400", bad, code, out)
		}
	}
}

// deadEvent stores an event and kills it (max_attempts 1, one failure).
func deadEvent(t *testing.T, pool *pgxpool.Pool, key string) int64 {
	t.Helper()
	id, _ := ingest(t, pool, "sume", key, "job.completed", `{"status": "COMPLETED"}`)
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1 WHERE id = $1`, id)
	c := claim(t, pool, "w-"+key, 1, "1 minute")
	if len(c) != 1 || c[0].ID != id {
		t.Fatalf("claimed %v, want event %d", c, id)
	}
	execSQL(t, pool, `SELECT webhooks.fail($1, $2, 1, 'handler exploded')`, id, "w-"+key)
	return id
}

// login posts the token to the login form and returns the Cookie header.
func login(t *testing.T, admin string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", admin+"/login", strings.NewReader(url.Values{"token": {testAdminToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", admin)
	resp, err := noRedirect().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "pginbox_session" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("login set no cookie (%d)", resp.StatusCode)
	return ""
}

// TestAdminHostCheck: a request whose Host is not the listener's (a DNS
// rebinding page) is refused; loopback names and PGINBOX_ADMIN_HOSTS pass.
func TestAdminHostCheck(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	srv := startServer(t, conf.URL(), runner.Config{AdminHosts: []string{"console.internal"}}, sumeOnly)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.Admin, "http://"))
	for _, tc := range []struct {
		host string
		want int
	}{
		{"evil.example:" + port, 421},
		{"127.0.0.1.nip.io:" + port, 421},
		{"localhost:" + port, 200},
		{"127.0.0.1:" + port, 200},
		{"[::1]:" + port, 200},
		{"console.internal", 200},
	} {
		for _, path := range []string{"/", "/api/status"} {
			if code, _, _ := adminDo(t, nil, "GET", srv.Admin+path, "", "", map[string]string{"Host": tc.host}); code != tc.want {
				t.Errorf("GET %s with Host %s: %d, want %d", path, tc.host, code, tc.want)
			}
		}
	}
	if code, _, _ := adminDo(t, nil, "GET", srv.Admin+"/metrics", "", "", map[string]string{"Host": "10.1.2.3:" + port}); code != 200 {
		t.Errorf("/metrics scraped by IP: %d, want 200", code)
	}
}

// TestAdminErrorsAndFlashAreFixedText: a failing section shows its name,
// never the database's error text; ?flash= shows only known sentences.
func TestAdminErrorsAndFlashAreFixedText(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	execSQL(t, pool, `ALTER VIEW webhooks.check_status RENAME TO check_status_gone`)
	t.Cleanup(func() { execSQL(t, pool, `ALTER VIEW webhooks.check_status_gone RENAME TO check_status`) })
	for _, path := range []string{"/", "/api/status"} {
		code, _, body := adminDo(t, nil, "GET", srv.Admin+path, "", "", nil)
		if code != 200 || !strings.Contains(body, "checks: unavailable") {
			t.Fatalf("GET %s: %d, want the checks section named unavailable:\n%.500s", path, code, body)
		}
		for _, leak := range []string{"does not exist", "check_status", "SQLSTATE", "relation"} {
			if strings.Contains(body, leak) {
				t.Errorf("GET %s shows database error text %q", path, leak)
			}
		}
	}
	_, _, body := adminDo(t, nil, "GET", srv.Admin+"/?flash="+url.QueryEscape("Your session expired, log in at https://evil.example"), "", "", nil)
	if strings.Contains(body, "evil.example") || strings.Contains(body, "session expired") {
		t.Fatal("?flash= text is shown on the page")
	}
	_, _, body = adminDo(t, nil, "GET", srv.Admin+"/?flash=replayed", "", "", nil)
	if !strings.Contains(body, "Replayed: the event is pending again") {
		t.Fatal("?flash=replayed shows no fixed sentence")
	}
}

// TestStatusFloodDoesNotStarveClaims: 64 goroutines hammer / and
// /api/status while events keep arriving; every event is still processed
// promptly and the console never holds more than its 2 connections.
func TestStatusFloodDoesNotStarveClaims(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	var handled atomic.Int64
	h := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		handled.Add(1)
		return nil
	})
	srv := startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 2, PollInterval: 100 * time.Millisecond}, sumeOnly)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var requests atomic.Int64
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := []string{"/", "/api/status"}[i%2]
			for ctx.Err() == nil {
				resp, err := client.Get(srv.Admin + path)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					requests.Add(1)
				}
			}
		}()
	}
	var maxConsole int64
	deadline := time.Now().Add(4 * time.Second)
	const n = 200
	for i := 0; i < n; i++ {
		ingest(t, pool, "sume", fmt.Sprintf("flood_%d", i), "job.completed", `{}`)
		if i%10 == 0 {
			maxConsole = max(maxConsole, queryInt(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pginbox-admin' AND datname = current_database()`))
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(15 * time.Millisecond)
	}
	waitFor(t, 20*time.Second, "every event processed during the flood", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status <> 'processed'`) == 0
	})
	stop()
	wg.Wait()
	t.Logf("%d console requests, %d events handled, at most %d console connections", requests.Load(), handled.Load(), maxConsole)
	if requests.Load() < 100 {
		t.Fatalf("only %d console requests: the flood did not happen", requests.Load())
	}
	if maxConsole > 2 || maxConsole < 1 {
		t.Fatalf("the console used %d connections, want 1 or 2 (its own pool)", maxConsole)
	}
}

// TestPublicListenerHeaderLimits: headers trickled byte by byte are cut off
// at ReadHeaderTimeout (slowloris); headers over 64 KiB answer 431 and
// store nothing.
func TestPublicListenerHeaderLimits(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	srv := startServer(t, conf.URL(), runner.Config{ReadHeaderTimeout: 700 * time.Millisecond}, sumeOnly)
	for _, base := range []string{srv.Base, srv.Admin} {
		addr := strings.TrimPrefix(base, "http://")
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		closed := make(chan time.Duration, 1)
		go func() {
			_, _ = io.Copy(io.Discard, conn) // returns when the server closes
			closed <- time.Since(start)
		}()
		_, _ = conn.Write([]byte("POST /webhooks/sume HTTP/1.1\r\nHost: x\r\n"))
		var took time.Duration
	trickle:
		for i := 0; ; i++ {
			select {
			case took = <-closed:
				break trickle
			case <-time.After(100 * time.Millisecond):
				if _, err := conn.Write([]byte{"X-Slow: abcdefgh"[i%16]}); err != nil {
					took = <-closed
					break trickle
				}
				if time.Since(start) > 8*time.Second {
					t.Fatalf("%s: a trickling client still connected after 8s", base)
				}
			}
		}
		conn.Close()
		if took < 600*time.Millisecond || took > 5*time.Second {
			t.Fatalf("%s: connection closed after %s, want about the 700ms ReadHeaderTimeout", base, took)
		}
	}
	body := sampleBody("sume", "job_flood")
	h := signSume(sumeSecret, body, time.Now())
	h.Set("X-Flood", strings.Repeat("a", 70<<10))
	code, _ := postRaw(t, srv.Base+"/webhooks/sume", h, body)
	if code != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("70 KiB of headers: %d, want 431", code)
	}
	h.Set("X-Flood", strings.Repeat("a", 30<<10))
	if code, _ := postRaw(t, srv.Base+"/webhooks/sume", h, body); code != 200 {
		t.Fatalf("30 KiB of headers: %d, want 200", code)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 1 {
		t.Fatalf("%d events stored, want only the one under the limit", n)
	}
}

// postRaw posts without the test client's helpers (which fail on errors).
func postRaw(t *testing.T, u string, h http.Header, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(body))
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(bufio.NewReader(resp.Body))
	return resp.StatusCode, string(b)
}

// TestMetricsServedWhileDatabaseDown: with the database refusing
// connections, /metrics still answers 200 with the runner's own metrics;
// only the gauges read from the database are left out (promhttp's default
// would answer 500 and hide everything, in the middle of an outage).
func TestMetricsServedWhileDatabaseDown(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	if body := httpGet(t, srv.Admin+"/metrics"); !strings.Contains(body, "pginbox_queue_depth") {
		t.Fatal("the queue gauges are missing while the database is up: the test would prove nothing")
	}
	ctx := context.Background()
	super, err := pgx.Connect(ctx, SuperuserURL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	db := pgx.Identifier{conf.Database}.Sanitize()
	if _, err := super.Exec(ctx, `ALTER DATABASE `+db+` WITH ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	defer super.Exec(ctx, `ALTER DATABASE `+db+` WITH ALLOW_CONNECTIONS true`) //nolint:errcheck // best effort
	if _, err := super.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, conf.Database); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics with the database down: %s", resp.Status)
	}
	if !strings.Contains(string(body), "pginbox_batch_fallbacks_total") || !strings.Contains(string(body), "go_goroutines") {
		t.Fatalf("/metrics with the database down lacks the runner's own metrics:\n%.2000s", body)
	}
	if strings.Contains(string(body), "pginbox_queue_depth{") {
		t.Fatal("the queue gauges were read although the database refuses connections: the outage was not exercised")
	}
}
