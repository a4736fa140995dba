package filter

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestParseFilter: the list's query parameters, and the message a bad one
// answers 400 with.
func TestParseFilter(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	cases := []struct {
		name    string
		q       url.Values
		wantErr string
	}{
		{name: "empty", q: url.Values{}},
		{name: "every field", q: url.Values{"provider": {"stripe"}, "status": {"dead"}, "event_type": {"charge.failed"},
			"external_id": {"evt_1"}, "source": {"backfill"}, "since": {"2026-01-02T15:04"}, "until": {"2026-01-03T15:04:05Z"}}},
		{name: "unknown status", q: url.Values{"status": {"lost"}}, wantErr: "status:"},
		{name: "bad time", q: url.Values{"since": {"yesterday"}}, wantErr: "since:"},
		{name: "since after until", q: url.Values{"since": {"2026-01-03T00:00:00Z"}, "until": {"2026-01-02T00:00:00Z"}}, wantErr: "must be before"},
		{name: "long provider", q: url.Values{"provider": {strings.Repeat("p", 256)}}, wantErr: "provider: longer than 255"},
		{name: "payload not an object", q: url.Values{"payload": {`[1]`}}, wantErr: "payload: not a JSON object"},
		{name: "payload over a week", q: url.Values{"payload": {`{"a": 1}`}, "since": {now.Add(-8 * 24 * time.Hour).Format(time.RFC3339)}},
			wantErr: "at most 7 days"},
		{name: "payload with a second closing brace", q: url.Values{"payload": {`{"a":1}}`}}, wantErr: "payload: not a JSON object"},
		{name: "payload with text after it", q: url.Values{"payload": {`{"a":1} x`}}, wantErr: "payload: not a JSON object"},
		{name: "payload with two objects", q: url.Values{"payload": {`{"a":1}{"b":2}`}}, wantErr: "payload: not a JSON object"},
		{name: "payload with \u0000", q: url.Values{"payload": {`{"a":"\u0000"}`}}, wantErr: `payload: \u0000`},
		{name: "payload with \u0000 in a key", q: url.Values{"payload": {`{"\u0000":1}`}}, wantErr: `payload: \u0000`},
		{name: "payload with a lone high surrogate", q: url.Values{"payload": {`{"a":"\ud800"}`}}, wantErr: "surrogate"},
		{name: "payload with a lone low surrogate", q: url.Values{"payload": {`{"a":"x\uDC00"}`}}, wantErr: "surrogate"},
		{name: "payload with a high surrogate before a non-surrogate", q: url.Values{"payload": {`{"a":"\ud800\u0041"}`}}, wantErr: "surrogate"},
		{name: "payload with two high surrogates", q: url.Values{"payload": {`{"a":"\ud800\ud800\udc00"}`}}, wantErr: "surrogate"},
		{name: "payload with a surrogate pair", q: url.Values{"payload": {`{"a":"\ud83d\ude00 \\u0000"}`}}},
		{name: "payload with an escaped backslash before u0000", q: url.Values{"payload": {`{"a":"\\u0000"}`}}},
		{name: "payload with invalid UTF-8", q: url.Values{"payload": {"{\"a\":\"\xff\"}"}}, wantErr: "payload: not UTF-8"},
		{name: "payload with a huge exponent", q: url.Values{"payload": {`{"a":1e200000}`}}, wantErr: "past what Postgres's numeric holds"},
		{name: "payload with a tiny exponent", q: url.Values{"payload": {`{"a":[1E-20000]}`}}, wantErr: "past what Postgres's numeric holds"},
		{name: "payload with an exponent of more than int", q: url.Values{"payload": {`{"a":1e99999999999999999999}`}}, wantErr: "numeric holds"},
		{name: "payload with a fine exponent", q: url.Values{"payload": {`{"a":1.5e-300, "b": -2E+10, "c": 1e400, "d": 1e-1001, "e": 0.5e-16382}`}}},
		{name: "payload longer than 4096 bytes", q: url.Values{"payload": {`{"a":"` + strings.Repeat("x", 4096) + `"}`}}, wantErr: "longer than 4096"},
		{name: "provider with NUL", q: url.Values{"provider": {"stripe\x00"}}, wantErr: "provider: not UTF-8 text"},
		{name: "event_type with invalid UTF-8", q: url.Values{"event_type": {"a\xff"}}, wantErr: "event_type: not UTF-8 text"},
		{name: "external_id with NUL", q: url.Values{"external_id": {"\x00"}}, wantErr: "external_id: not UTF-8 text"},
		{name: "source with invalid UTF-8", q: url.Values{"source": {"\xc3"}}, wantErr: "source: not UTF-8 text"},
		{name: "payload within a week", q: url.Values{"payload": {`{"a": 1}`}, "since": {now.Add(-6 * 24 * time.Hour).Format(time.RFC3339)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.q)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestCursor: a cursor reads back as the position it was made from; any
// other string is a bad filter.
func TestCursor(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 3, 4, 5, 123456000, time.UTC)
	c, err := decodeCursor(EncodeCursor(at, 42))
	if err != nil || !c.At.Equal(at) || c.ID != 42 {
		t.Fatalf("round trip: %+v, %v", c, err)
	}
	tampered := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, bad := range []string{"", "v1.1.2", "dj.x", EncodeCursor(at, 0),
		tampered("v1.9223372036854775807.1"), tampered("v1.-9223372036854775808.1"), tampered("v1.253402300800000000.1"),
		tampered("v1.1.9223372036854775808"), tampered("v1.1.-1"), tampered("v2.1.1")} {
		if _, err := decodeCursor(bad); err == nil {
			t.Errorf("decodeCursor(%q): want an error", bad)
		}
	}
}
