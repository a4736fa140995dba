package runner

import (
	"encoding/json"
	"time"
)

// Event is one claimed row of webhooks.events, as a handler sees it.
type Event struct {
	// ID is webhooks.events.id.
	ID int64 `json:"id"`
	// Provider is the configured provider name, e.g. "sume".
	Provider string `json:"provider"`
	// ExternalID is the provider's idempotency key.
	ExternalID string `json:"external_id"`
	// EventType is the provider's event type.
	EventType string `json:"event_type"`
	// Payload is the stored JSON body.
	Payload json.RawMessage `json:"payload"`
	// Source is "webhook" or "backfill" (or what another stack wrote).
	Source string `json:"source"`
	// ReceivedAt is when the first delivery was stored.
	ReceivedAt time.Time `json:"received_at"`
	// Attempt is this claim's attempt number: the fencing token.
	Attempt int32 `json:"attempt"`
	// MaxAttempts is when the event goes dead.
	MaxAttempts int32 `json:"max_attempts"`
	// LockedUntil is when the lease expires unless extended.
	LockedUntil time.Time `json:"locked_until"`
}

// claimColumns are the webhooks.events columns scanned into an Event.
const claimColumns = `id, provider, external_id, event_type, payload, source, received_at, attempts, max_attempts, locked_until`
