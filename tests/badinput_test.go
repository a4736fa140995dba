package tests

import (
	"context"
	"strings"
	"testing"
)

// TestIngestBadInput: every malformed argument raises a clear error and
// writes nothing.
func TestIngestBadInput(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ok := `{"ok": true}`
	tests := []struct {
		name                            string
		provider, externalID, eventType any
		payload                         any
		code, msg                       string
	}{
		{"null provider", nil, "id", "t", ok, "22004", "provider must not be null"},
		{"empty provider", "", "id", "t", ok, "22023", "provider must not be empty"},
		{"blank provider", " \t", "id", "t", ok, "22023", "provider must not be empty"},
		{"overlong provider", strings.Repeat("p", 65), "id", "t", ok, "22001", "provider is 65 bytes long; the limit is 64 bytes"},
		{"null external_id", "p", nil, "t", ok, "22004", "external_id must not be null"},
		{"empty external_id", "p", "", "t", ok, "22023", "external_id must not be empty"},
		{"overlong external_id", "p", strings.Repeat("x", 256), "t", ok, "22001", "external_id is 256 bytes long; the limit is 255 bytes"},
		{"overlong multibyte external_id", "p", strings.Repeat("é", 128), "t", ok, "22001", "external_id is 256 bytes long"},
		{"10,000-character external_id", "p", strings.Repeat("x", 10000), "t", ok, "22001", "external_id is 10000 bytes long"},
		{"null event_type", "p", "id", nil, ok, "22004", "event_type must not be null"},
		{"empty event_type", "p", "id", "", ok, "22023", "event_type must not be empty"},
		{"overlong event_type", "p", "id", strings.Repeat("t", 256), ok, "22001", "event_type is 256 bytes long"},
		{"NUL byte in external_id", "p", "a\x00b", "t", ok, "22021", "invalid byte sequence"},
		{"NUL byte in provider", "p\x00", "id", "t", ok, "22021", "invalid byte sequence"},
		{"invalid UTF-8 in external_id", "p", "a\xffb", "t", ok, "22021", "invalid byte sequence"},
		{"NUL escape in payload", "p", "id", "t", `{"a": "\u0000"}`, "22P05", "unsupported Unicode escape sequence"},
		{"null payload", "p", "id", "t", nil, "22023", "payload must be a JSON object, got SQL NULL"},
		{"JSON null payload", "p", "id", "t", `null`, "22023", "payload must be a JSON object, got null"},
		{"array payload", "p", "id", "t", `[1, 2]`, "22023", "payload must be a JSON object, got array"},
		{"string payload", "p", "id", "t", `"x"`, "22023", "payload must be a JSON object, got string"},
		{"not JSON at all", "p", "id", "t", `{"a": `, "22P02", "invalid input syntax for type json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pool.Exec(context.Background(),
				`SELECT webhooks.ingest_webhook($1::text, $2::text, $3::text, $4::jsonb)`,
				tc.provider, tc.externalID, tc.eventType, tc.payload)
			wantPgError(t, err, tc.code, tc.msg)
		})
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 0 {
		t.Fatalf("bad input wrote %d rows", n)
	}
	// The limits themselves are accepted.
	if _, outcome := ingest(t, pool, strings.Repeat("p", 64), strings.Repeat("x", 255), strings.Repeat("t", 255), ok); outcome != "created" {
		t.Fatalf("ids at the limit: %q", outcome)
	}
}

// TestFunctionArgumentErrors: the other functions reject nonsense clearly.
func TestFunctionArgumentErrors(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	tests := []struct{ name, sql, code, msg string }{
		{"claim without worker", `SELECT * FROM webhooks.claim('')`, "22023", "worker must not be empty"},
		{"claim zero events", `SELECT * FROM webhooks.claim('w', 0)`, "22023", "max_events must be between 1 and 10000"},
		{"claim too many events", `SELECT * FROM webhooks.claim('w', 10001)`, "22023", "max_events must be between 1 and 10000"},
		{"claim negative lease", `SELECT * FROM webhooks.claim('w', 1, '-1 second')`, "22023", "lease must be a positive interval"},
		{"rescue zero rows", `SELECT * FROM webhooks.rescue_leases(0)`, "22023", "max_rows must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pool.Exec(context.Background(), tc.sql)
			wantPgError(t, err, tc.code, tc.msg)
		})
	}
}

// TestContradictoryRowsImpossible: the CHECK constraints reject rows whose
// columns contradict each other, whoever writes them.
func TestContradictoryRowsImpossible(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	id, _ := ingest(t, pool, "p", "e", "t", `{}`)
	tests := []struct{ name, set, constraint string }{
		{"processed without processed_at", `status = 'processed'`, "events_processed_check"},
		{"processed_at while pending", `processed_at = now()`, "events_processed_check"},
		{"processing without a lock", `status = 'processing', attempts = 1, claimed_at = now()`, "events_locked_check"},
		{"locked while pending", `locked_by = 'w', locked_until = now()`, "events_locked_check"},
		{"locked_by without locked_until", `status = 'processing', attempts = 1, claimed_at = now(), locked_by = 'w'`, "events_locked_check"},
		{"processing with no attempt", `status = 'processing', locked_by = 'w', locked_until = now(), claimed_at = now()`, "events_processing_attempts_check"},
		{"unknown status", `status = 'done'`, "events_status_check"},
		{"attempts over max", `attempts = 26`, "events_attempts_check"},
		{"pending without payload", `payload = NULL, payload_pruned_at = now()`, "events_payload_check"},
		{"pruned mark with a payload", `payload_pruned_at = now()`, "events_payload_pruned_check"},
		{"dead without an error", `status = 'dead'`, "events_dead_check"},
		{"blank provider", `provider = ' '`, "events_provider_check"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pool.Exec(context.Background(), `UPDATE webhooks.events SET `+tc.set+` WHERE id = $1`, id)
			wantPgError(t, err, "23514", tc.constraint)
		})
	}
	_, err := pool.Exec(context.Background(), `INSERT INTO webhooks.events (provider, external_id, event_type, payload) VALUES ('p', 'e', 't', '{}')`)
	wantPgError(t, err, "23505", "keys_pkey")
}
