package main

import (
	"testing"
	"time"
)

// TestSeedPlan: the seeded events are spread over whole days ending
// yesterday, each numbered once.
func TestSeedPlan(t *testing.T) {
	t.Parallel()
	now := mustTime(t, "2026-03-10T15:04:05Z")
	for _, tc := range []struct {
		n    int64
		days int
		want int
	}{{1000, 90, 90}, {91, 90, 90}, {45, 90, 45}, {10_000_000, 90, 90}} {
		plan := seedPlan(now, tc.n, tc.days)
		if len(plan) != tc.want {
			t.Fatalf("%d events over %d days: %d days planned, want %d", tc.n, tc.days, len(plan), tc.want)
		}
		var next int64
		for _, d := range plan {
			if d.lo != next || d.hi < d.lo {
				t.Fatalf("%d events: day %s numbers %d…%d, want from %d", tc.n, d.day, d.lo, d.hi, next)
			}
			next = d.hi + 1
		}
		if next != tc.n {
			t.Fatalf("%d events: %d numbered", tc.n, next)
		}
		first, last := plan[0].day, plan[len(plan)-1].day
		if !first.Equal(mustTime(t, "2025-12-10T00:00:00Z")) || last.After(mustTime(t, "2026-03-09T00:00:00Z")) ||
			tc.want == 90 && !last.Equal(mustTime(t, "2026-03-09T00:00:00Z")) {
			t.Fatalf("%d events: days %s … %s", tc.n, first, last)
		}
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
