package format

import (
	"math"
	"testing"
	"time"
)

// TestFormat: each figure the console shows, at the precision its size
// calls for; a remedy's backticks become <code> and the rest is escaped.
func TestFormat(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct{ got, want string }{
		{Duration(0), "0s"},
		{Duration(250 * time.Microsecond), "250µs"},
		{Duration(42 * time.Millisecond), "42ms"},
		{Duration(1500 * time.Millisecond), "1.5s"},
		{Duration(3*time.Minute + 5*time.Second), "3m05s"},
		{Duration(26*time.Hour + 7*time.Minute), "26h07m"},
		{Duration(72 * time.Hour), "3d"},
		{Num(math.NaN()), "–"},
		{Num(12), "12"},
		{Num(0.125), "0.125"},
		{Num(12345), "12.3k"},
		{Num(-2_500_000), "-2.5M"},
		{Range(nil, nil), "any"},
		{Range(nil, f(5)), "≤ 5"},
		{Range(f(1), nil), "≥ 1"},
		{Range(f(1), f(20000)), "1 – 20.0k"},
		{Clip("héllo", 3), "hél…"},
		{Clip("héllo", 5), "héllo"},
		{string(Code("run `pginbox gaps` <now>")), "run <code>pginbox gaps</code> &lt;now&gt;"},
		{Ago((*time.Time)(nil)), "–"},
		{Ago(time.Now().Add(-90 * time.Second))[:4], "1m30"},
		{Ago(time.Now().Add(time.Hour + time.Minute))[:3], "in "},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if v, ok := Float((*float64)(nil)); ok {
		t.Errorf("Float(nil pointer) = %v, true; want absent", v)
	}
	if v, ok := Float(int32(7)); !ok || v != 7 {
		t.Errorf("Float(int32(7)) = %v, %t", v, ok)
	}
}
