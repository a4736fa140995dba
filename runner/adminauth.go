package runner

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sessionCookie is the console's login cookie. Its value is
// "<expiry unix>.<hex HMAC-SHA256(process key, token, expiry)>": never the
// token itself, useless after expiry or a restart (the key is per process).
const (
	sessionCookie = "pginbox_session"
	sessionTTL    = 12 * time.Hour
)

// adminAuth decides who may use the admin listener: the token, the session
// cookie, the failure limiter and the Host check.
type adminAuth struct {
	token   string
	key     []byte // per-process HMAC key for session cookies
	hosts   map[string]bool
	limiter *failureLimiter
	now     func() time.Time
}

func newAdminAuth(token, listenAddr string, extraHosts []string) *adminAuth {
	a := &adminAuth{token: token, key: make([]byte, 32), hosts: map[string]bool{
		"localhost": true, "127.0.0.1": true, "::1": true,
	}, limiter: newFailureLimiter(10, 200, time.Minute), now: time.Now}
	if _, err := rand.Read(a.key); err != nil {
		panic("crypto/rand: " + err.Error())
	}
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

// hostAllowed reports whether the request's Host names this listener: a
// page on another origin that re-points its DNS name at 127.0.0.1 (DNS
// rebinding) sends its own name and is refused.
func (a *adminAuth) hostAllowed(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return a.hosts[strings.Trim(strings.ToLower(host), "[]")]
}

// credential is what a request presented.
type credential int

const (
	credNone  credential = iota // nothing presented
	credValid                   // the token or a valid session
	credWrong                   // a wrong token or a forged/expired session
)

// check reads the Bearer header, else the session cookie. cookie reports
// whether the credential came from the cookie (CSRF applies to those only).
func (a *adminAuth) check(r *http.Request) (c credential, cookie bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if ok && a.tokenOK(strings.TrimSpace(tok)) {
			return credValid, false
		}
		return credWrong, false
	}
	if ck, err := r.Cookie(sessionCookie); err == nil && ck.Value != "" {
		if a.sessionOK(ck.Value) {
			return credValid, true
		}
		return credWrong, true
	}
	return credNone, false
}

// tokenOK compares in constant time (a hash first, so the length of the
// token does not leak through the comparison either).
func (a *adminAuth) tokenOK(tok string) bool {
	x, y := sha256.Sum256([]byte(tok)), sha256.Sum256([]byte(a.token))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

func (a *adminAuth) sessionMAC(expiry string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(a.token))
	m.Write([]byte{0})
	m.Write([]byte(expiry))
	return hex.EncodeToString(m.Sum(nil))
}

// newSession returns a cookie value valid for sessionTTL.
func (a *adminAuth) newSession() (string, time.Time) {
	exp := a.now().Add(sessionTTL).Truncate(time.Second)
	e := strconv.FormatInt(exp.Unix(), 10)
	return e + "." + a.sessionMAC(e), exp
}

func (a *adminAuth) sessionOK(v string) bool {
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

// sameOrigin is the CSRF defence for cookie-authenticated actions (beside
// SameSite=Strict): the browser's Origin, else its Referer, must name the
// Host the request was sent to; a request with neither is refused.
func sameOrigin(r *http.Request) bool {
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

// clientIP is the peer address without its port (the admin listener is
// not behind a trusted proxy by default, so no X-Forwarded-For).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// failureLimiter counts failed authentications per client address and
// overall in fixed windows: past perIP failures from one address (an IPv6
// /64 counts as one address), further attempts from it answer 429 until
// the window ends; past total failures from everyone, so do attempts from
// every address that has failed in this window (or that it can no longer
// track), and past hardTotal (4 x total) attempts from every address. An
// address that has not failed is still heard below hardTotal, so a flood of
// guesses from a few addresses does not lock out an operator's right
// token. Each attempt is counted as a failure when it is admitted and
// refunded when it turns out not to be one, so concurrent guesses cannot
// slip past the bounds between the check and the count. Its memory is
// bounded: it forgets every address when a window ends and tracks at most
// maxClients within one.
type failureLimiter struct {
	mu          sync.Mutex
	perIP       int
	total       int
	window      time.Duration
	windowStart time.Time
	byIP        map[string]int
	all         int
}

const maxClients = 10000

func newFailureLimiter(perIP, total int, window time.Duration) *failureLimiter {
	return &failureLimiter{perIP: perIP, total: total, window: window, byIP: map[string]int{}}
}

func (l *failureLimiter) roll(now time.Time) {
	if now.Sub(l.windowStart) >= l.window {
		l.windowStart = now.Truncate(l.window)
		clear(l.byIP)
		l.all = 0
	}
}

// admit decides whether an attempt from ip may be checked at all. It
// returns how long ip must wait (then nothing is counted), or 0 and a
// ticket: the attempt is counted as a failure until refund(ip, ticket)
// says it was none.
func (l *failureLimiter) admit(ip string, now time.Time) (wait time.Duration, ticket time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll(now)
	k := limitKey(ip)
	n, tracked := l.byIP[k]
	suspect := n > 0 || (!tracked && len(l.byIP) >= maxClients)
	if n >= l.perIP || (l.all >= l.total && suspect) || l.all >= 4*l.total {
		return max(l.windowStart.Add(l.window).Sub(now), time.Second), time.Time{}
	}
	l.all++
	if tracked || len(l.byIP) < maxClients {
		l.byIP[k]++
	}
	return 0, l.windowStart
}

// refund takes back the failure admit counted for an attempt that turned
// out to be no failure (the right token, or no credential at all).
func (l *failureLimiter) refund(ip string, ticket time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.windowStart.Equal(ticket) {
		return // counted in a window that has ended
	}
	if l.all > 0 {
		l.all--
	}
	k := limitKey(ip)
	if n, ok := l.byIP[k]; ok {
		if n <= 1 {
			delete(l.byIP, k)
		} else {
			l.byIP[k] = n - 1
		}
	}
}

// limitKey is the address the limiter counts for ip: an IPv4 address
// itself, an IPv6 address's /64 (one host usually holds a whole /64, so
// counting single IPv6 addresses would give it 2^64 tries).
func limitKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if a = a.Unmap(); a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return ip
	}
	return p.String()
}
