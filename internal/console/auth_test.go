package console

import (
	"net/http/httptest"
	"testing"
	"time"
)

// TestSessionCookie: a cookie this process issued is valid until it
// expires; a forged MAC, a malformed value, another token's cookie and
// another process's cookie are not.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := newAdminAuth("secret", "127.0.0.1:9090", nil, clock)
	copy(a.key, "process key one")
	v, exp := a.newSession()
	if want := now.Add(sessionTTL); !exp.Equal(want) {
		t.Fatalf("expiry %v, want %v", exp, want)
	}
	other := newAdminAuth("secret", "127.0.0.1:9090", nil, clock)
	copy(other.key, "process key two")
	otherToken := newAdminAuth("other", "127.0.0.1:9090", nil, clock)
	copy(otherToken.key, "process key one")
	later := newAdminAuth("secret", "127.0.0.1:9090", nil, func() time.Time { return now.Add(sessionTTL) })
	copy(later.key, "process key one")
	cases := []struct {
		name string
		a    *adminAuth
		v    string
		want bool
	}{
		{"issued here", a, v, true},
		{"forged MAC", a, v[:len(v)-1] + "0", false},
		{"no MAC", a, "12345", false},
		{"not a number", a, "x." + v, false},
		{"another process", other, v, false},
		{"another token", otherToken, v, false},
		{"expired", later, v, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.a.sessionOK(tc.v); got != tc.want {
				t.Fatalf("sessionOK(%q) = %t, want %t", tc.v, got, tc.want)
			}
		})
	}
}

// TestHostAllowed: the loopback names, the listen address's host (unless
// unspecified) and the extra hosts, in any case, with or without a port.
func TestHostAllowed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		listen string
		extra  []string
		host   string
		want   bool
	}{
		{"0.0.0.0:9090", nil, "localhost:9090", true},
		{"0.0.0.0:9090", nil, "[::1]:9090", true},
		{"0.0.0.0:9090", nil, "0.0.0.0:9090", false},
		{"10.0.0.5:9090", nil, "10.0.0.5:9090", true},
		{"admin.internal:9090", nil, "ADMIN.internal", true},
		{":9090", []string{"Console.Example"}, "console.example:443", true},
		{":9090", []string{"[fd00::1]"}, "[fd00::1]:9090", true},
		{":9090", nil, "rebound.example", false},
	}
	for _, tc := range cases {
		t.Run(tc.listen+"/"+tc.host, func(t *testing.T) {
			t.Parallel()
			a := newAdminAuth("", tc.listen, tc.extra, time.Now)
			r := httptest.NewRequest("GET", "/", nil)
			r.Host = tc.host
			if got := a.hostAllowed(r); got != tc.want {
				t.Fatalf("hostAllowed(%q) = %t, want %t", tc.host, got, tc.want)
			}
		})
	}
}

// TestSameOrigin: an action's Origin (else Referer) must name the Host it
// was sent to; a cross-site fetch or a request with neither is refused.
func TestSameOrigin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, origin, referer, site string
		want                        bool
	}{
		{name: "same origin", origin: "http://localhost:9090", want: true},
		{name: "referer only", referer: "http://localhost:9090/events?x=1", want: true},
		{name: "null origin falls back to referer", origin: "null", referer: "http://localhost:9090/", want: true},
		{name: "another origin", origin: "http://evil.example", want: false},
		{name: "cross-site fetch", origin: "http://localhost:9090", site: "cross-site", want: false},
		{name: "neither", want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", "/events/replay", nil)
			r.Host = "localhost:9090"
			for k, v := range map[string]string{"Origin": tc.origin, "Referer": tc.referer, "Sec-Fetch-Site": tc.site} {
				if v != "" {
					r.Header.Set(k, v)
				}
			}
			if got := sameOrigin(r); got != tc.want {
				t.Fatalf("sameOrigin = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestLocalPath: a redirect target stays on this site.
func TestLocalPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/events?status=dead": "/events?status=dead", "": "/", "//evil.example/": "/",
		"/\\evil.example": "/", "https://evil.example/": "/", "events": "/",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}
