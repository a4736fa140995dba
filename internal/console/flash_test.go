package console

import (
	"net/http/httptest"
	"testing"
)

// TestFlashText: only the fixed sentences show, a count only where one
// applies and only as a number.
func TestFlashText(t *testing.T) {
	t.Parallel()
	cases := []struct{ query, want string }{
		{"", ""},
		{"flash=replayed", flashes["replayed"]},
		{"flash=bulk-replayed&n=12", "Replayed 12 events: they are pending again."},
		{"flash=bulk-replayed&n=<b>", "Replayed 0 events: they are pending again."},
		{"flash=bulk-replayed&n=-3", "Replayed 0 events: they are pending again."},
		{"flash=<script>", ""},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			if got := flashText(httptest.NewRequest("GET", "/?"+tc.query, nil)); got != tc.want {
				t.Fatalf("flashText(%q) = %q, want %q", tc.query, got, tc.want)
			}
		})
	}
}
