package auth

import (
	"net/netip"
	"sync"
	"time"
)

// failureLimiter counts failed authentications per client address and
// overall in fixed windows: past perIP failures from one address (an IPv6
// /64 counts as one address), further attempts from it answer 429 until
// the window ends; past total failures from everyone, so do attempts from
// every address that has failed in this window, from every IPv6 /64 whose
// /48 has (or that it can no longer track), and past hardTotal (4 x total)
// attempts from every address. An address that has not failed is still
// heard below hardTotal, so a flood of guesses from a few addresses does
// not lock out an operator's right token. Each attempt is counted as a
// failure when it is admitted and refunded when it turns out not to be one,
// so concurrent guesses cannot slip past the bounds between the check and
// the count. Its memory is bounded: it forgets every address when a window
// ends and tracks at most maxClients within one.
//
// Why these bounds. Past total, a fresh address adds one failure before it
// is refused, so reaching hardTotal (which locks out everyone without a
// session) takes about 3 x total = 600 fresh addresses within a minute.
// Counting IPv6 by /64 alone made that free: one host with a /48 holds
// 65,536 /64s, and ~620 of them (one /54) reached it. Past total, a /64
// whose /48 has failed is refused as its own failures would be, so one
// site (an IPv6 /48, like one IPv4 address) adds at most total failures
// and a lock-out needs ~600 distinct IPv4 addresses or IPv6 /48s in a
// minute, a botnet's worth. Below that the guessing rate stays bounded by
// hardTotal = 800 a minute: against the 16-character minimum token that is
// nothing (the reference asks for 64 hex characters), and a logged-in
// operator's session is never refused.
type failureLimiter struct {
	mu          sync.Mutex
	perIP       int
	total       int
	window      time.Duration
	windowStart time.Time
	byIP        map[string]int
	byNet       map[string]int // failures per IPv6 /48 (see netKey)
	all         int
}

// maxClients bounds the addresses the limiter tracks in one window.
const maxClients = 10000

// newFailureLimiter returns a limiter with the given bounds per window.
func newFailureLimiter(perIP, total int, window time.Duration) *failureLimiter {
	return &failureLimiter{perIP: perIP, total: total, window: window, byIP: map[string]int{}, byNet: map[string]int{}}
}

// roll starts a new window, forgetting every count, once the current one
// has ended.
func (l *failureLimiter) roll(now time.Time) {
	if now.Sub(l.windowStart) >= l.window {
		l.windowStart = now.Truncate(l.window)
		clear(l.byIP)
		clear(l.byNet)
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
	k, net := limitKey(ip), netKey(ip)
	n, tracked := l.byIP[k]
	suspect := n > 0 || (net != "" && l.byNet[net] > 0) || (!tracked && len(l.byIP) >= maxClients)
	if n >= l.perIP || (l.all >= l.total && suspect) || l.all >= 4*l.total {
		return max(l.windowStart.Add(l.window).Sub(now), time.Second), time.Time{}
	}
	l.all++
	if tracked || len(l.byIP) < maxClients {
		l.byIP[k]++
		if net != "" {
			l.byNet[net]++
		}
	}
	return 0, l.windowStart
}

// refund takes back the failure admit counted for an attempt that turned
// out to be no failure (the right token, or no Credential at all).
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
		if net := netKey(ip); net != "" {
			if m := l.byNet[net]; m <= 1 {
				delete(l.byNet, net)
			} else {
				l.byNet[net] = m - 1
			}
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

// netKey is the IPv6 /48 of ip (one site's allocation, as one IPv4 address
// is), or "" for an IPv4 address or something that is not an address.
func netKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Unmap().Is4() {
		return ""
	}
	p, err := a.Prefix(48)
	if err != nil {
		return ""
	}
	return p.String()
}
