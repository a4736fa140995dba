package auth

import (
	"fmt"
	"testing"
	"time"
)

// TestFailureLimiter: 10 failures block their own address for the rest of
// the minute; 200 from everyone block every address that failed, never one
// that has not (so a flood from many addresses does not lock out an
// operator's first attempt), and addresses it can no longer track; 800
// block everyone; an IPv6 /64 is one address and an IPv4-mapped address is
// its IPv4 address; a refunded attempt counts for nothing; a new minute
// forgets everything. Past the bound, a fresh /64 of an IPv6 /48 that has
// failed is refused too, so one /48 cannot mint the fresh addresses that
// reach 800 and lock out everyone.
func TestFailureLimiter(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		total   int      // the global bound (200 unless set)
		fails   []string // one failure from each, in order
		refunds []string // one admitted and refunded attempt from each
		tries   []string // one attempt from each, refused or failed
		probe   string
		at      time.Duration // after start
		want    bool          // blocked
	}{
		{name: "nine failures do not block", fails: repeat("10.0.0.1", 9), probe: "10.0.0.1", at: time.Second},
		{name: "ten failures block their address", fails: repeat("10.0.0.1", 10), probe: "10.0.0.1", at: time.Second, want: true},
		{name: "ten failures do not block another address", fails: repeat("10.0.0.1", 10), probe: "10.0.0.2", at: time.Second},
		{name: "refunded attempts count for nothing", refunds: repeat("10.0.0.1", 50), probe: "10.0.0.1", at: time.Second},
		{name: "a new minute forgets", fails: repeat("10.0.0.1", 10), probe: "10.0.0.1", at: time.Minute},
		{name: "a flood blocks an address that failed", fails: append(spread(250), "192.0.2.9"), probe: "192.0.2.9", at: time.Second, want: true},
		{name: "a flood does not block an address that has not failed", fails: spread(250), probe: "192.0.2.9", at: time.Second},
		{name: "four times the bound blocks every address", fails: spread(800), probe: "192.0.2.9", at: time.Second, want: true},
		{name: "one IPv6 /64 is one address", fails: v6(10), probe: "2001:db8:1:2::ffff", at: time.Second, want: true},
		{name: "another /64 is another address", fails: v6(10), probe: "2001:db8:1:3::1", at: time.Second},
		{name: "an IPv4-mapped address is its IPv4 address", fails: repeat("::ffff:10.0.0.1", 10), probe: "10.0.0.1", at: time.Second, want: true},
		{name: "an address it can no longer track is blocked past the bound", total: maxClients + 5,
			fails: spread(maxClients + 5), probe: "198.51.100.7", at: time.Second, want: true},
		{name: "fresh /64s of one /48 do not lock out everyone", fails: v6spread(200), tries: v6fresh(2000),
			probe: "192.0.2.9", at: time.Second},
		{name: "fresh /64s of one /48 do not lock out another /48", fails: v6spread(200), tries: v6fresh(2000),
			probe: "2001:db8:2::1", at: time.Second},
		{name: "past the bound a fresh /64 of a /48 that failed is refused", fails: v6spread(200),
			probe: "2001:db8:1:ffff::1", at: time.Second, want: true},
		{name: "below the bound a fresh /64 of a /48 that failed is heard", fails: v6spread(50),
			probe: "2001:db8:1:ffff::1", at: time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			total := c.total
			if total == 0 {
				total = 200
			}
			l := newFailureLimiter(10, total, time.Minute)
			for _, ip := range c.fails {
				if wait, _ := l.admit(ip, start); wait > 0 {
					t.Fatalf("setup: a failure from %s was refused", ip)
				}
			}
			for _, ip := range c.refunds {
				wait, ticket := l.admit(ip, start)
				if wait > 0 {
					t.Fatalf("setup: an attempt from %s was refused", ip)
				}
				l.refund(ip, ticket)
			}
			for _, ip := range c.tries {
				l.admit(ip, start)
			}
			wait, _ := l.admit(c.probe, start.Add(c.at))
			if got := wait > 0; got != c.want {
				t.Fatalf("attempt from %s refused = %t, want %t", c.probe, got, c.want)
			}
		})
	}
}

func repeat(ip string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = ip
	}
	return out
}

// spread is one failure from each of n distinct IPv4 addresses.
func spread(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}
	return out
}

// v6 is n failures from n addresses of one IPv6 /64.
func v6(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("2001:db8:1:2::%x", i+1)
	}
	return out
}

// v6spread is n failures from /64s of 2001:db8:1::/48, ten from each.
func v6spread(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("2001:db8:1:%x::1", i/10)
	}
	return out
}

// v6fresh is one attempt from each of n further /64s of 2001:db8:1::/48.
func v6fresh(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("2001:db8:1:%x::1", 0x1000+i)
	}
	return out
}
