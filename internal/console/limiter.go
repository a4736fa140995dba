package console

import (
	"net/netip"
	"sync"
	"time"
)

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

// maxClients bounds the addresses the limiter tracks in one window.
const maxClients = 10000

// newFailureLimiter returns a limiter with the given bounds per window.
func newFailureLimiter(perIP, total int, window time.Duration) *failureLimiter {
	return &failureLimiter{perIP: perIP, total: total, window: window, byIP: map[string]int{}}
}

// roll starts a new window, forgetting every count, once the current one
// has ended.
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
