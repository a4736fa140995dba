package sig

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Envelope is the top level of a JSON object body: each member's name and its
// raw value. Nested values are never looked into, so a nested field can never
// be mistaken for a top-level one. A name given twice keeps its last value,
// as Postgres jsonb does.
type Envelope map[string]json.RawMessage

// ReadEnvelope checks that body is exactly one JSON object that Postgres jsonb
// will accept and returns its top-level members.
func ReadEnvelope(body []byte) (Envelope, error) {
	if !utf8.Valid(body) || !json.Valid(body) || !jsonbSafe(body) {
		return nil, BadRequest(ReasonBodyNotJSON)
	}
	depth, numbersFit := jsonLimits(body)
	if !numbersFit {
		return nil, BadRequest(ReasonBodyNotJSON)
	}
	if depth > MaxJSONDepth {
		return nil, BadRequest(ReasonBodyTooDeep)
	}
	// json.Valid has refused empty and whitespace-only bodies; the first
	// non-space byte tells an object from any other value.
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, BadRequest(ReasonBodyNotJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var env Envelope
	if err := dec.Decode(&env); err != nil || env == nil {
		return nil, BadRequest(ReasonBodyNotJSON)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, BadRequest(ReasonBodyNotJSON) // trailing data
	}
	return env, nil
}

// jsonbSafe reports whether the strings of body, which must be valid JSON,
// hold only \u escapes that Postgres jsonb accepts: jsonb refuses \u0000 and
// unpaired UTF-16 surrogates, and a body the database refuses would otherwise
// fail on every redelivery.
func jsonbSafe(body []byte) bool {
	inString := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			i++ // the escaped character; valid JSON guarantees it exists
			if body[i] != 'u' {
				continue
			}
			r := hex4(body[i+1 : i+5])
			i += 4
			switch {
			case r == 0:
				return false
			case r >= 0xDC00 && r <= 0xDFFF: // a low surrogate without a high one
				return false
			case r >= 0xD800 && r <= 0xDBFF: // a high surrogate needs a low one next
				if i+6 >= len(body) || body[i+1] != '\\' || body[i+2] != 'u' {
					return false
				}
				if lo := hex4(body[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
					return false
				}
				i += 6
			}
		}
	}
	return true
}

// MaxJSONDepth is the deepest nesting of objects and arrays a body may have.
// Real webhook payloads nest a handful of levels; a deeper one is an attack on
// the parsers downstream (Postgres refuses very deep jsonb with SQLSTATE 54001).
const MaxJSONDepth = 64

// jsonLimits walks body, which must be valid JSON, once and returns the
// deepest nesting of objects and arrays, and whether every number fits
// Postgres numeric, which jsonb stores numbers as: at most 131072 digits
// before the decimal point and 16383 after (1e200000 is valid JSON that jsonb
// refuses with SQLSTATE 22003).
func jsonLimits(body []byte) (deepest int, numbersFit bool) {
	depth, inString := 0, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		case c == '-' || c >= '0' && c <= '9':
			end, fits := numberFitsNumeric(body, i)
			if !fits {
				return deepest, false
			}
			i = end - 1
		}
	}
	return deepest, true
}

// numberFitsNumeric reads the number starting at body[i] (valid JSON:
// [-] int [. frac] [e|E [+|-] exp]) and returns where it ends and whether
// Postgres numeric can hold it.
func numberFitsNumeric(body []byte, i int) (int, bool) {
	j := i
	if body[j] == '-' {
		j++
	}
	intStart := j
	for j < len(body) && body[j] >= '0' && body[j] <= '9' {
		j++
	}
	intDigits := j - intStart
	if intDigits == 1 && body[intStart] == '0' {
		intDigits = 0
	}
	fracDigits := 0
	if j < len(body) && body[j] == '.' {
		j++
		for j < len(body) && body[j] >= '0' && body[j] <= '9' {
			j++
			fracDigits++
		}
	}
	exp := 0
	if j < len(body) && (body[j] == 'e' || body[j] == 'E') {
		j++
		sign := 1
		if body[j] == '+' || body[j] == '-' {
			if body[j] == '-' {
				sign = -1
			}
			j++
		}
		for j < len(body) && body[j] >= '0' && body[j] <= '9' {
			if exp < 1<<20 {
				exp = exp*10 + int(body[j]-'0')
			}
			j++
		}
		exp *= sign
	}
	return j, intDigits+exp <= 131072 && fracDigits-exp <= 16383
}

// hex4 decodes the four hexadecimal digits of a \u escape in valid JSON.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// Has reports whether the member name is present and not null.
func (e Envelope) Has(name string) bool {
	raw, ok := e[name]
	return ok && string(raw) != "null"
}

// Key returns the member name as an idempotency key: a JSON string, or a JSON
// integer as its literal digits. Anything else is ReasonKeyInvalid.
func (e Envelope) Key(name string) (string, error) {
	raw := e[name]
	if len(raw) == 0 {
		return "", BadRequest(ReasonKeyMissing)
	}
	var s string
	switch c := raw[0]; {
	case c == '"':
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", BadRequest(ReasonKeyInvalid)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		var n json.Number
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&n); err != nil || !isInteger(n.String()) {
			return "", BadRequest(ReasonKeyInvalid)
		}
		s = n.String()
	default:
		return "", BadRequest(ReasonKeyInvalid)
	}
	return ValidKey(s)
}

// Str returns the member name when it is a non-empty JSON string.
func (e Envelope) Str(name string) (string, bool) {
	raw := e[name]
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return "", false
	}
	return s, true
}

// isInteger reports whether a JSON number literal is an integer: an optional
// minus sign and digits, no fraction and no exponent.
func isInteger(n string) bool {
	n = strings.TrimPrefix(n, "-")
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}

// ValidText reports whether s can be stored as an external_id or event_type:
// valid UTF-8, not blank, at most maxTextBytes bytes, no control characters (NUL included).
func ValidText(s string) bool {
	if len(s) > maxTextBytes || !utf8.ValidString(s) || strings.TrimSpace(s) == "" {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// ValidKey returns s when it is a valid idempotency key, else ReasonKeyInvalid.
func ValidKey(s string) (string, error) {
	if !ValidText(s) {
		return "", BadRequest(ReasonKeyInvalid)
	}
	return s, nil
}

// HeaderKey returns the header name as the idempotency key.
func HeaderKey(h http.Header, name string) (string, error) {
	v := h.Get(name)
	if v == "" {
		return "", BadRequest(ReasonKeyMissing)
	}
	return ValidKey(v)
}

// EventType returns t when it is a valid event type: ReasonEventTypeMissing
// when it is empty, ReasonEventTypeInvalid when it cannot be stored.
func EventType(t string) (string, error) {
	if t == "" {
		return "", BadRequest(ReasonEventTypeMissing)
	}
	if !ValidText(t) {
		return "", BadRequest(ReasonEventTypeInvalid)
	}
	return t, nil
}
