package outbound

import (
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"0":                             0,
		"-3":                            0,
		"12":                            12 * time.Second,
		"999999":                        24 * time.Hour,
		"Fri, 02 Jan 2026 03:04:35 GMT": 30 * time.Second,
		"Fri, 02 Jan 2026 03:00:00 GMT": 0, // in the past
		"tomorrow":                      0,
	} {
		if got := RetryAfter(v, now); got != want {
			t.Errorf("RetryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}
