// Package pginboxtype holds the types every part of pginbox shares: the
// [Event] a handler receives, the [Handler] interface and the names of an
// event's statuses. It imports nothing else of pginbox, so any package —
// the runner, its internal parts, the bench — can import it.
// Package runner re-exports Event, Handler and HandlerFunc: an embedding
// program needs only runner.
package pginboxtype

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
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
	// Trace is the trace context stored with the event, from which
	// pginbox serve starts the span of each handler run (the handler's ctx
	// carries that span). Not part of the http: handler's JSON.
	Trace TraceContext `json:"-"`
}

// TraceContext is an event's stored W3C traceparents: Parent
// (webhooks.events.trace_parent, the delivery's span: a run joins its
// trace) and Link (trace_link, where a replay moved it: a run starts a
// trace of its own linked to it). Empty when none was stored.
type TraceContext struct {
	Parent string
	Link   string
}

// Handler processes one claimed event. Handle runs inside the transaction
// that will complete the event: whatever it writes through tx commits if and
// only if the event is completed, so its effects in the database happen
// exactly once. A returned error fails the event (retried with backoff, dead
// after max_attempts) and rolls back its writes.
type Handler interface {
	Handle(ctx context.Context, tx pgx.Tx, ev *Event) error
}

// HandlerFunc adapts a function to a [Handler].
type HandlerFunc func(ctx context.Context, tx pgx.Tx, ev *Event) error

// Handle calls f(ctx, tx, ev).
func (f HandlerFunc) Handle(ctx context.Context, tx pgx.Tx, ev *Event) error { return f(ctx, tx, ev) }

// Status is the status column of webhooks.events.
type Status string

// The statuses an event moves through.
const (
	// StatusPending is waiting to be claimed (again, after a failure, once
	// run_after has passed).
	StatusPending Status = "pending"
	// StatusProcessing is claimed under a two-phase lease (locked_until).
	StatusProcessing Status = "processing"
	// StatusProcessed is completed: the handler's effects committed.
	StatusProcessed Status = "processed"
	// StatusDead used all its attempts; only a replay runs it again.
	StatusDead Status = "dead"
)
