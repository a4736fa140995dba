package process

import (
	"testing"
	"time"
)

// TestParseHandlerHTTPTimeout: an http: handler always has a timeout; zero
// (or a negative value) gives the 30s default, not a client that waits forever.
func TestParseHandlerHTTPTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		{"zero is the default", 0, 30 * time.Second},
		{"negative is the default", -time.Second, 30 * time.Second},
		{"explicit", 5 * time.Second, 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, err := ParseHandler("http:http://127.0.0.1:1/hook", tc.timeout)
			if err != nil {
				t.Fatal(err)
			}
			hh, ok := h.(*httpHandler)
			if !ok {
				t.Fatalf("ParseHandler returned %T, want *httpHandler", h)
			}
			if hh.Client.Timeout != tc.want {
				t.Fatalf("client timeout %v, want %v", hh.Client.Timeout, tc.want)
			}
		})
	}
}
