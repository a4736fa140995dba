// Package retention enforces pginbox's retention: payloads of processed
// events are dropped early, whole rows (their dedup keys) late, in short
// transactions. The runner's prune schedule and `pginbox prune` share it.
package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The defaults of PGINBOX_KEEP_PAYLOAD and PGINBOX_KEEP_KEYS.
const (
	// DefaultKeepPayload is how long payloads of processed events are kept.
	DefaultKeepPayload = 30 * 24 * time.Hour
	// DefaultKeepKeys is how long finished events are kept, so that late
	// redeliveries still dedupe. It must be longer than the payloads' time.
	DefaultKeepKeys = 400 * 24 * time.Hour
)

// Report is what one retention run removed.
type Report struct {
	// PayloadsPruned counts the processed events whose payload was dropped.
	PayloadsPruned int64 `json:"payloads_pruned"`
	// EventsDeleted counts the finished events deleted whole.
	EventsDeleted int64 `json:"events_deleted"`
	// Calls counts the webhooks.prune calls (one short transaction each).
	Calls int `json:"calls"`
}

// Querier is what Prune needs of a pool or a connection.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Prune calls webhooks.prune(keepPayload, keepKeys) in batches of at most
// 5,000 rows per kind and per transaction until nothing is left.
func Prune(ctx context.Context, q Querier, keepPayload, keepKeys time.Duration) (Report, error) {
	var rep Report
	for rep.Calls < 10000 {
		var out struct {
			Payloads int64 `json:"payloads_pruned"`
			Events   int64 `json:"events_deleted"`
			More     bool  `json:"more"`
		}
		var raw []byte
		err := q.QueryRow(ctx, `SELECT webhooks.prune($1::interval, $2::interval, batch_size => 1000, max_rows => 5000)`,
			keepPayload.String(), keepKeys.String()).Scan(&raw)
		if err != nil {
			return rep, fmt.Errorf("prune: %w", err)
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return rep, fmt.Errorf("prune: %w", err)
		}
		rep.Calls++
		rep.PayloadsPruned += out.Payloads
		rep.EventsDeleted += out.Events
		if !out.More {
			break
		}
	}
	return rep, nil
}
