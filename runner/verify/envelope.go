package verify

import "github.com/pginbox/pginbox/internal/provider/sig"

// Envelope is the top level of a JSON object body: each member's name and its
// raw value (map[string]json.RawMessage). Nested values are never looked
// into, so a nested field can never be mistaken for a top-level one. A name
// given twice keeps its last value, as Postgres jsonb does. Has, Key (a
// member as an idempotency key) and Str (a non-empty string member) read it.
type Envelope = sig.Envelope

// ReadEnvelope checks that body is exactly one JSON object that Postgres jsonb
// will accept and returns its top-level members.
func ReadEnvelope(body []byte) (Envelope, error) { return sig.ReadEnvelope(body) }

// MaxJSONDepth is the deepest nesting of objects and arrays a body may have.
// Real webhook payloads nest a handful of levels; a deeper one is an attack on
// the parsers downstream (Postgres refuses very deep jsonb with SQLSTATE 54001).
const MaxJSONDepth = sig.MaxJSONDepth
