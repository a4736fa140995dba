package status

import (
	"context"
	"fmt"
)

// Queue is the depth of the queue and the age of its oldest claimable event.
type Queue struct {
	// Pending, Processing and Dead count the events in each status.
	Pending, Processing, Dead int64
	// OldestPending is how many seconds the oldest claimable event has waited.
	OldestPending float64
}

// ReadQueue counts pending, processing and dead events (each through its
// partial index) and the age of the oldest claimable one. An event held
// behind an earlier event of its sequence (order_held) is not claimable;
// spelled out, the test also lets the oldest claimable one come from the
// claim index, whose predicate it is.
func ReadQueue(ctx context.Context, q Querier) (Queue, error) {
	var qu Queue
	err := q.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM webhooks.events WHERE status = 'pending'),
		       (SELECT count(*) FROM webhooks.events WHERE status = 'processing'),
		       (SELECT count(*) FROM webhooks.events WHERE status = 'dead'),
		       coalesce((SELECT extract(epoch FROM now() - min(run_after)) FROM webhooks.events
		                 WHERE status = 'pending' AND NOT order_held AND run_after <= now()), 0)::float8`).Scan(
		&qu.Pending, &qu.Processing, &qu.Dead, &qu.OldestPending)
	if err != nil {
		return Queue{}, fmt.Errorf("read the queue: %w", err)
	}
	return qu, nil
}
