package auth

import (
	"crypto/tls"
	"net/http/httptest"
	"net/netip"
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
	a := newAuth("secret", "127.0.0.1:9090", nil, clock)
	copy(a.key, "process key one")
	v, exp := a.NewSession()
	if want := now.Add(SessionTTL); !exp.Equal(want) {
		t.Fatalf("expiry %v, want %v", exp, want)
	}
	other := newAuth("secret", "127.0.0.1:9090", nil, clock)
	copy(other.key, "process key two")
	otherToken := newAuth("other", "127.0.0.1:9090", nil, clock)
	copy(otherToken.key, "process key one")
	later := newAuth("secret", "127.0.0.1:9090", nil, func() time.Time { return now.Add(SessionTTL) })
	copy(later.key, "process key one")
	cases := []struct {
		name string
		a    *Auth
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
			a := newAuth("", tc.listen, tc.extra, time.Now)
			r := httptest.NewRequest("GET", "/", nil)
			r.Host = tc.host
			if got := a.HostAllowed(r); got != tc.want {
				t.Fatalf("HostAllowed(%q) = %t, want %t", tc.host, got, tc.want)
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
			if got := SameOrigin(r); got != tc.want {
				t.Fatalf("SameOrigin = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestClient: X-Forwarded-For and X-Forwarded-Proto are believed only from
// a trusted proxy; the client is then the right-most address that is not
// a trusted proxy, whatever a client wrote to the left of it.
func TestClient(t *testing.T) {
	t.Parallel()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	cases := []struct {
		name, peer string
		xff        []string
		proto      string
		tls        bool
		proxies    []netip.Prefix
		want       string
		https      bool
	}{
		{name: "no proxies configured: the peer", peer: "10.0.0.1:5000", xff: []string{"203.0.113.7"}, proto: "https", want: "10.0.0.1"},
		{name: "an untrusted peer's headers are ignored", peer: "198.51.100.1:5000", xff: []string{"203.0.113.7"}, proto: "https",
			proxies: proxies, want: "198.51.100.1"},
		{name: "an untrusted peer over TLS", peer: "198.51.100.1:5000", tls: true, proxies: proxies, want: "198.51.100.1", https: true},
		{name: "a trusted proxy names the client", peer: "10.0.0.1:5000", xff: []string{"203.0.113.7"}, proto: "https",
			proxies: proxies, want: "203.0.113.7", https: true},
		{name: "a forged entry left of the client is ignored", peer: "10.0.0.1:5000", xff: []string{"192.0.2.66, 203.0.113.7"},
			proxies: proxies, want: "203.0.113.7"},
		{name: "proxies in a chain are skipped", peer: "10.0.0.1:5000", xff: []string{"192.0.2.66, 203.0.113.7, 10.2.3.4", "fd00::9"},
			proxies: proxies, want: "203.0.113.7"},
		{name: "IPv6 client", peer: "[fd00::1]:5000", xff: []string{"2001:db8::5"}, proto: "http", proxies: proxies, want: "2001:db8::5"},
		{name: "only proxies: the left-most", peer: "10.0.0.1:5000", xff: []string{"10.9.9.9"}, proxies: proxies, want: "10.9.9.9"},
		{name: "no X-Forwarded-For: the proxy", peer: "10.0.0.1:5000", proxies: proxies, want: "10.0.0.1"},
		{name: "the last X-Forwarded-Proto counts", peer: "10.0.0.1:5000", proto: "http, https", proxies: proxies, want: "10.0.0.1", https: true},
		{name: "X-Forwarded-Proto http", peer: "10.0.0.1:5000", proto: "https, http", proxies: proxies, want: "10.0.0.1"},
		{name: "a client with its port", peer: "10.0.0.1:5000", xff: []string{"203.0.113.7:41000"}, proxies: proxies, want: "203.0.113.7"},
		{name: "an IPv6 client with its port", peer: "10.0.0.1:5000", xff: []string{"[2001:db8::5]:41000"}, proxies: proxies, want: "2001:db8::5"},
		{name: "an IPv4-mapped peer", peer: "[::ffff:10.0.0.1]:5000", xff: []string{"203.0.113.7"}, proxies: proxies, want: "203.0.113.7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAuth("secret", "127.0.0.1:9090", nil, time.Now)
			a.proxies = tc.proxies
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if tc.proto != "" {
				r.Header.Set("X-Forwarded-Proto", tc.proto)
			}
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			addr, https := a.Client(r)
			if addr != tc.want || https != tc.https {
				t.Fatalf("client = %q, https %t; want %q, %t", addr, https, tc.want, tc.https)
			}
			wantName := sessionCookie
			if tc.https {
				wantName = secureCookie
			}
			if ck := a.Cookie(r, "v", time.Time{}, 1); ck.Name != wantName || ck.Secure != tc.https {
				t.Fatalf("cookie %s Secure=%t, want %s Secure=%t", ck.Name, ck.Secure, wantName, tc.https)
			}
		})
	}
}

// TestRotateKey: after "sign out everywhere" no session issued before is
// valid; a new one is.
func TestRotateKey(t *testing.T) {
	t.Parallel()
	a := newAuth("secret", "127.0.0.1:9090", nil, time.Now)
	old, _ := a.NewSession()
	if !a.sessionOK(old) {
		t.Fatal("a fresh session is not valid")
	}
	if err := a.RotateKey(); err != nil {
		t.Fatal(err)
	}
	if a.sessionOK(old) {
		t.Fatal("a session from before the rotation is still valid")
	}
	if v, _ := a.NewSession(); !a.sessionOK(v) {
		t.Fatal("a session after the rotation is not valid")
	}
}
