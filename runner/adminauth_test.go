package runner

import (
	"fmt"
	"testing"
	"time"
)

// TestFailureLimiter: 10 failures block their own address for the rest of
// the minute; 200 from everyone block every address that failed, never one
// that has not (so a flood from many addresses does not lock out an
// operator's first attempt), and addresses it can no longer track; an IPv6
// /64 is one address; a new minute forgets everything.
func TestFailureLimiter(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		fails []string // one failure from each, in order
		probe string
		at    time.Duration // after start
		want  bool          // blocked
	}{
		{"nine failures do not block", repeat("10.0.0.1", 9), "10.0.0.1", time.Second, false},
		{"ten failures block their address", repeat("10.0.0.1", 10), "10.0.0.1", time.Second, true},
		{"ten failures do not block another address", repeat("10.0.0.1", 10), "10.0.0.2", time.Second, false},
		{"a new minute forgets", repeat("10.0.0.1", 10), "10.0.0.1", time.Minute, false},
		{"a flood blocks an address that failed", append(spread(250), "192.0.2.9"), "192.0.2.9", time.Second, true},
		{"a flood does not block an address that has not failed", spread(250), "192.0.2.9", time.Second, false},
		{"one IPv6 /64 is one address", v6(10), "2001:db8:1:2::ffff", time.Second, true},
		{"another /64 is another address", v6(10), "2001:db8:1:3::1", time.Second, false},
		{"an address it can no longer track is blocked in a flood", spread(maxClients + 10), "198.51.100.7", time.Second, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := newFailureLimiter(10, 200, time.Minute)
			for _, ip := range c.fails {
				l.fail(ip, start)
			}
			if got := l.blocked(c.probe, start.Add(c.at)) > 0; got != c.want {
				t.Fatalf("blocked(%s) = %t, want %t", c.probe, got, c.want)
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
