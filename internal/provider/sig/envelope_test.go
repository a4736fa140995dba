package sig

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReadEnvelope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		ok   bool
		keys []string // top-level names expected when ok
	}{
		{"empty object", `{}`, true, nil},
		{"surrounding whitespace", " \n\t{\"a\": 1}\r\n ", true, []string{"a"}},
		{"nested values are not flattened", `{"payload":{"request_id":"r"}}`, true, []string{"payload"}},
		{"escaped backslash before u0000", `{"a":"\\u0000"}`, true, []string{"a"}},
		{"surrogate pair", `{"a":"\ud83d\ude00"}`, true, []string{"a"}},
		{"escaped control character", `{"a":"\u0001"}`, true, []string{"a"}},
		{"escaped name", `{"job\u005fid":"j"}`, true, []string{"job_id"}},
		{"empty", ``, false, nil},
		{"whitespace", " \n ", false, nil},
		{"null", `null`, false, nil},
		{"array", `[{"id":"a"}]`, false, nil},
		{"string", `"{}"`, false, nil},
		{"number", `42`, false, nil},
		{"truncated", `{"id":"a"`, false, nil},
		{"trailing garbage", `{"id":"a"}x`, false, nil},
		{"second value", `{"id":"a"} {"id":"b"}`, false, nil},
		{"invalid UTF-8", "{\"id\":\"\xc3\x28\"}", false, nil},
		{"invalid UTF-8 outside strings", "{\"id\":\"a\"}\xff", false, nil},
		{"BOM", "\xef\xbb\xbf{}", false, nil},
		{"u0000 escape", `{"a":"x\u0000y"}`, false, nil},
		{"u0000 escape in a name", `{"\u0000":1}`, false, nil},
		{"lone high surrogate", `{"a":"\ud800"}`, false, nil},
		{"high surrogate then other escape", `{"a":"\ud800\u0041"}`, false, nil},
		{"high surrogate at end", `{"a":"\udbff"}`, false, nil},
		{"lone low surrogate", `{"a":"\udc00"}`, false, nil},
		{"single quotes", `{'a':1}`, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, err := ReadEnvelope([]byte(tt.body))
			if !tt.ok {
				checkReject(t, err, http.StatusBadRequest, ReasonBodyNotJSON)
				return
			}
			checkReject(t, err, 0, "")
			if len(env) != len(tt.keys) {
				t.Fatalf("got %d members, want %d", len(env), len(tt.keys))
			}
			for _, k := range tt.keys {
				if _, ok := env[k]; !ok {
					t.Fatalf("member %q missing from %v", k, env)
				}
			}
		})
	}
}

func TestEnvelopeKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 255)
	tests := []struct {
		name   string
		value  string // raw JSON of the "k" member
		want   string
		reason string // "" when valid
	}{
		{"string", `"job_1"`, "job_1", ""},
		{"integer", `12345678901234567890123`, "12345678901234567890123", ""},
		{"negative integer", `-7`, "-7", ""},
		{"zero", `0`, "0", ""},
		{"escaped string", `"a\u00e9\/b"`, "aé/b", ""},
		{"255 bytes", `"` + long + `"`, long, ""},
		{"256 bytes", `"` + long + `k"`, "", ReasonKeyInvalid},
		{"254 bytes and a 2-byte rune", `"` + long[:254] + `é"`, "", ReasonKeyInvalid},
		{"empty string", `""`, "", ReasonKeyInvalid},
		{"blank string", `"   "`, "", ReasonKeyInvalid},
		{"tab", `"a\tb"`, "", ReasonKeyInvalid},
		{"newline", `"a\nb"`, "", ReasonKeyInvalid},
		{"control", `"a\u0001"`, "", ReasonKeyInvalid},
		{"DEL", `"a\u007f"`, "", ReasonKeyInvalid},
		{"C1 control", `"a\u0085"`, "", ReasonKeyInvalid},
		{"fraction", `1.5`, "", ReasonKeyInvalid},
		{"integral fraction", `1.0`, "", ReasonKeyInvalid},
		{"exponent", `1e3`, "", ReasonKeyInvalid},
		{"true", `true`, "", ReasonKeyInvalid},
		{"object", `{"id":"a"}`, "", ReasonKeyInvalid},
		{"array", `["a"]`, "", ReasonKeyInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, err := ReadEnvelope([]byte(`{"k": ` + tt.value + ` }`))
			if err != nil {
				t.Fatalf("ReadEnvelope: %v", err)
			}
			got, err := env.Key("k")
			if tt.reason != "" {
				checkReject(t, err, http.StatusBadRequest, tt.reason)
				return
			}
			checkReject(t, err, 0, "")
			if got != tt.want {
				t.Fatalf("key = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnvelopeHasAndStr(t *testing.T) {
	t.Parallel()
	env, err := ReadEnvelope([]byte(`{"s": "x", "e": "", "i": 1, "o": {}, "n": null }`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"n": false, "s": true, "e": true, "i": true, "o": true, "absent": false} {
		if got := env.Has(name); got != want {
			t.Errorf("has(%q) = %v, want %v", name, got, want)
		}
	}
	for name, want := range map[string]bool{"n": false, "s": true, "e": false, "i": false, "o": false, "absent": false} {
		if _, got := env.Str(name); got != want {
			t.Errorf("str(%q) ok = %v, want %v", name, got, want)
		}
	}
}

func TestNumbersFitNumeric(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		ok   bool
	}{
		{`{"n": 1}`, true},
		{`{"n": -0.5e3, "m": [1, 2.25, 3E+2]}`, true},
		{`{"n": 1e131071}`, true},
		{`{"n": 1e131072}`, false},
		{`{"n": 1e-16383}`, true},
		{`{"n": 1e-16384}`, false},
		{`{"n": 0.1e-16383}`, false},
		{`{"n": "1e999999"}`, true}, // a string, not a number
		{`{"n": 1e1000000000000}`, false},
	}
	for _, tc := range tests {
		if _, got := jsonLimits([]byte(tc.body)); got != tc.ok {
			t.Errorf("%s: %v, want %v", tc.body, got, tc.ok)
		}
	}
}

func TestJSONDepth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body  string
		depth int
	}{
		{`{}`, 1},
		{`{"a": [1, {"b": "[[[["}]}`, 3}, // brackets inside strings do not count
		{`{"a": "\"{"}`, 1},
		{`[[[[]]]]`, 4},
	}
	for _, tc := range tests {
		if got, _ := jsonLimits([]byte(tc.body)); got != tc.depth {
			t.Errorf("%s: depth %d, want %d", tc.body, got, tc.depth)
		}
	}
}

func FuzzReadEnvelope(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"a":[1,{"b":null}]} `, `[]`, `null`, ``, `{"a":"\u0000"}`, `{"a":"\\u0000"}`,
		`{"a":"\ud83d\ude00"}`, `{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`, `{"a":1}{}`, "{\"a\":\"\xff\"}", `{"a":1,"a":2}`, `{"\ud800\udc00":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := ReadEnvelope(body)
		if err != nil {
			checkReject(t, err, http.StatusBadRequest, ReasonBodyNotJSON)
			// Anything encoding/json takes as an object, in valid UTF-8 and
			// without \u escapes (where jsonb is stricter), must be accepted.
			var m map[string]any
			if utf8.Valid(body) && !bytes.Contains(body, []byte(`\u`)) && json.Unmarshal(body, &m) == nil && m != nil {
				t.Fatalf("rejected %q which is a JSON object", body)
			}
			return
		}
		if !utf8.Valid(body) || !json.Valid(body) {
			t.Fatalf("accepted %q which is not valid UTF-8 JSON", body)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil || m == nil {
			t.Fatalf("accepted %q which is not a JSON object: %v", body, err)
		}
		if len(m) != len(env) {
			t.Fatalf("Envelope has %d members, encoding/json finds %d", len(env), len(m))
		}
		for name, raw := range env {
			if !json.Valid(raw) || !bytes.Equal(bytes.TrimSpace(m[name]), bytes.TrimSpace(raw)) {
				t.Fatalf("member %q = %q, encoding/json finds %q", name, raw, m[name])
			}
		}
	})
}
