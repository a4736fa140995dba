package runner

import (
	"time"

	"github.com/pginbox/pginbox/internal/process"
	"github.com/pginbox/pginbox/pginboxtype"
)

// Handler processes one claimed event. Handle runs inside the transaction
// that will complete the event: whatever it writes through tx commits if and
// only if the event is completed, so its effects in the database happen
// exactly once. A returned error fails the event (retried with backoff, dead
// after max_attempts) and rolls back its writes. It is [pginboxtype.Handler].
type Handler = pginboxtype.Handler

// HandlerFunc adapts a function to a [Handler]. It is [pginboxtype.HandlerFunc].
type HandlerFunc = pginboxtype.HandlerFunc

// Event is one claimed row of webhooks.events, as a handler sees it. It is
// [pginboxtype.Event].
type Event = pginboxtype.Event

// ParseHandler builds a handler from PGINBOX_HANDLER: "none" (returns nil,
// nil), "sql:<schema.function>" or "http:<url>". httpTimeout bounds each POST
// of an http: handler; zero (or negative) means the default, 30s, never no
// timeout. A sql: handler ignores it.
func ParseHandler(spec string, httpTimeout time.Duration) (Handler, error) {
	return process.ParseHandler(spec, httpTimeout)
}
