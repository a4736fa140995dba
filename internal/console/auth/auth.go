// Package auth decides who may use the admin listener: the admin token
// (Authorization: Bearer), the session cookie a login issues (an HMAC under a
// per-process key, never the token), the Host check against DNS rebinding,
// the same-origin check against CSRF, the client address behind trusted
// proxies and the limiter of failed attempts. It knows nothing of the pages
// or the database: internal/console asks it about each request.
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sessionCookie is the console's login cookie over plain http (loopback,
// an SSH tunnel), secureCookie its name when the cookie is Secure (TLS, or
// X-Forwarded-Proto: https from a trusted proxy): the __Host- prefix makes
// the browser refuse one set by a sibling subdomain or over http, so no
// other site can plant it. Its value is
// "<expiry unix>.<hex HMAC-SHA256(session key, token, expiry)>": never the
// token itself, useless after expiry, after a restart (the key is per
// process) or after "sign out everywhere" (which draws a new key).
const (
	sessionCookie = "pginbox_session"
	secureCookie  = "__Host-" + sessionCookie
	SessionTTL    = 12 * time.Hour
)

// Auth decides who may use the admin listener: the token, the session
// cookie, the failure limiter and the Host check.
type Auth struct {
	token   string
	keyMu   sync.RWMutex
	key     []byte // per-process HMAC key for session cookies; RotateKey replaces it
	hosts   map[string]bool
	proxies []netip.Prefix // peers whose X-Forwarded-For/-Proto are believed
	limiter *failureLimiter
	now     func() time.Time
}

// newAuth returns the rules for token on the listener at listenAddr
// that also goes by extraHosts; the caller fills key with random bytes.
func newAuth(token, listenAddr string, extraHosts []string, now func() time.Time) *Auth {
	a := &Auth{token: token, key: make([]byte, 32), hosts: map[string]bool{
		"localhost": true, "127.0.0.1": true, "::1": true,
	}, limiter: newFailureLimiter(10, 200, time.Minute), now: now}
	if host, _, err := net.SplitHostPort(listenAddr); err == nil {
		if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
			a.hosts[strings.ToLower(host)] = true
		}
	}
	for _, h := range extraHosts {
		a.hosts[strings.Trim(strings.ToLower(h), "[]")] = true
	}
	return a
}

// New returns the rules for token (empty: no token, every request is
// refused but the health checks) on the listener at listenAddr that also
// goes by extraHosts, believing X-Forwarded-For/-Proto from proxies, with a
// session key drawn at random; now is the clock of the sessions and the
// limiter.
func New(token, listenAddr string, extraHosts []string, proxies []netip.Prefix, now func() time.Time) (*Auth, error) {
	a := newAuth(token, listenAddr, extraHosts, now)
	a.proxies = proxies
	if _, err := rand.Read(a.key); err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return a, nil
}

// HasToken reports whether an admin token is set.
func (a *Auth) HasToken() bool { return a.token != "" }

// Admit asks the failure limiter whether ip may try a credential now: a
// wait above zero refuses it for that long; else ticket is the attempt to
// Refund if it succeeds (or presented nothing).
func (a *Auth) Admit(ip string) (wait time.Duration, ticket time.Time) {
	return a.limiter.admit(ip, a.now())
}

// Refund takes back the attempt Admit counted under ticket.
func (a *Auth) Refund(ip string, ticket time.Time) { a.limiter.refund(ip, ticket) }

// HostAllowed reports whether the request's Host names this listener: a
// page on another origin that re-points its DNS name at 127.0.0.1 (DNS
// rebinding) sends its own name and is refused.
func (a *Auth) HostAllowed(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return a.hosts[strings.Trim(strings.ToLower(host), "[]")]
}

// Credential is what a request presented.
type Credential int

const (
	None  Credential = iota // nothing presented
	Valid                   // the token or a valid session
	Wrong                   // a wrong token or a forged/expired session
)

// Check reads the Bearer header, else the session cookie. cookie reports
// whether the credential came from the cookie (CSRF applies to those only).
func (a *Auth) Check(r *http.Request) (c Credential, cookie bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if ok && a.TokenOK(strings.TrimSpace(tok)) {
			return Valid, false
		}
		return Wrong, false
	}
	if ck, err := r.Cookie(a.cookieName(r)); err == nil && ck.Value != "" {
		if a.sessionOK(ck.Value) {
			return Valid, true
		}
		return Wrong, true
	}
	return None, false
}

// TokenOK compares in constant time (a hash first, so the length of the
// token does not leak through the comparison either).
func (a *Auth) TokenOK(tok string) bool {
	x, y := sha256.Sum256([]byte(tok)), sha256.Sum256([]byte(a.token))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

// sessionMAC is the session cookie's HMAC for expiry.
func (a *Auth) sessionMAC(expiry string) string {
	a.keyMu.RLock()
	defer a.keyMu.RUnlock()
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(a.token))
	m.Write([]byte{0})
	m.Write([]byte(expiry))
	return hex.EncodeToString(m.Sum(nil))
}

// NewSession returns a cookie value valid for SessionTTL.
func (a *Auth) NewSession() (string, time.Time) {
	exp := a.now().Add(SessionTTL).Truncate(time.Second)
	e := strconv.FormatInt(exp.Unix(), 10)
	return e + "." + a.sessionMAC(e), exp
}

// sessionOK reports whether v is an unexpired cookie this process issued.
func (a *Auth) sessionOK(v string) bool {
	e, mac, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil || a.now().Unix() >= exp {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(a.sessionMAC(e)))
}

// RotateKey draws a new session key: every session issued so far, in every
// browser, is invalid from now on ("sign out everywhere"); the token still
// works.
func (a *Auth) RotateKey() error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("session key: %w", err)
	}
	a.keyMu.Lock()
	a.key = key
	a.keyMu.Unlock()
	return nil
}

// cookieName is the session cookie's name on r: the __Host- one when the
// cookie is Secure there, the plain one over http (a browser refuses a
// __Host- cookie without Secure, and Secure over http).
func (a *Auth) cookieName(r *http.Request) string {
	if _, secure := a.Client(r); secure {
		return secureCookie
	}
	return sessionCookie
}

// Cookie is the session cookie for r carrying v (maxAge -1 deletes
// it).
func (a *Auth) Cookie(r *http.Request, v string, exp time.Time, maxAge int) *http.Cookie {
	_, secure := a.Client(r)
	return &http.Cookie{Name: a.cookieName(r), Value: v, Path: "/", Expires: exp, MaxAge: maxAge,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// SameOrigin is the CSRF defence for cookie-authenticated actions (beside
// SameSite=Strict): the browser's Origin, else its Referer, must name the
// Host the request was sent to; a request with neither is refused.
func SameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return false
	}
	src := r.Header.Get("Origin")
	if src == "" || src == "null" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		return false
	}
	u, err := url.Parse(src)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// clientIP is the peer address without its port.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Client is who sent r and whether it came over https. From a peer in
// PGINBOX_ADMIN_TRUSTED_PROXIES it is the right-most X-Forwarded-For
// address that is not a trusted proxy (each proxy appends the address it
// heard from, so everything left of that is the client's own say), and
// https is X-Forwarded-Proto's last value; from any other peer the headers
// are ignored: the peer itself, https when the connection is TLS.
func (a *Auth) Client(r *http.Request) (addr string, https bool) {
	peer := clientIP(r)
	if !a.trusted(peer) {
		return peer, r.TLS != nil
	}
	addr = peer
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if ap, err := netip.ParseAddrPort(hop); err == nil {
			hop = ap.Addr().String() // some proxies append the client's port
		}
		if hop = strings.Trim(hop, "[]"); hop == "" {
			continue
		}
		addr = hop
		if !a.trusted(hop) {
			break
		}
	}
	protos := strings.Split(strings.Join(r.Header.Values("X-Forwarded-Proto"), ","), ",")
	proto := strings.ToLower(strings.TrimSpace(protos[len(protos)-1]))
	return addr, r.TLS != nil || proto == "https"
}

// trusted reports whether ip is in PGINBOX_ADMIN_TRUSTED_PROXIES.
func (a *Auth) trusted(ip string) bool {
	if len(a.proxies) == 0 {
		return false
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range a.proxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
