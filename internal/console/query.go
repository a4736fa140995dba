package console

import (
	"fmt"
	"net/url"
	"time"

	"github.com/pginbox/pginbox/internal/console/filter"
)

// Query is one statement the console runs, with its arguments.
type Query struct {
	// Name says which statement it is: "page" or "counts" (ListSQL), or
	// which part of a page reads it (ReaderSQL).
	Name string
	// SQL is the statement, with $n placeholders.
	SQL string
	// Args are its arguments, in order.
	Args []any
}

// ListSQL returns the statements GET /api/events runs for query (the page
// and the capped counts per status), for the bench and the plan tests to
// EXPLAIN. A bad query returns the error the API answers 400 with.
func ListSQL(query url.Values) ([]Query, error) {
	lr, err := filter.ParseList(query)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var args []any
	page := lr.Filter.ListSQL(eventCols, lr.After, lr.Limit+1, now, &args)
	var cargs []any
	counts := lr.Filter.CountSQL(now, &cargs)
	return []Query{{Name: "page", SQL: page, Args: args}, {Name: "counts", SQL: counts, Args: cargs}}, nil
}

// The statements of the overview and of an event's page that read the
// events (beside the list's, ListSQL). Each names a status other than
// processed as a literal, so the planner leaves the history branch of
// webhooks.events out and reads the queue alone, or bounds received_at
// (backfills: the last day's slices of history).
const (
	// deadSQL is the overview's dead events, newest first (events_dead_idx).
	deadSQL = `
		SELECT id, provider, external_id, event_type, attempts, coalesce(last_error, ''), updated_at
		FROM webhooks.events WHERE status = 'dead' ORDER BY updated_at DESC LIMIT 50`
	// byProviderSQL counts the unfinished events per provider.
	byProviderSQL = `
		SELECT provider, count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'processing'),
		       count(*) FILTER (WHERE status = 'dead')
		FROM webhooks.events WHERE status IN ('pending', 'processing', 'dead')
		GROUP BY provider ORDER BY provider`
	// backfillsSQL is the last day's backfilled events, newest first.
	backfillsSQL = `
		SELECT id, provider, external_id, event_type, received_at FROM webhooks.events
		WHERE source = 'backfill' AND received_at >= now() - interval '24 hours'
		ORDER BY id DESC LIMIT 10`
	// retryingSQL counts the events that failed and wait for their next
	// attempt, and when the first of them runs.
	retryingSQL = `
		SELECT count(*), min(run_after) FROM webhooks.events
		WHERE status = 'pending' AND last_error IS NOT NULL`
	// sequenceHeadSQL is the head of a sequence ($1 provider, $2 key),
	// read through events_order_idx.
	sequenceHeadSQL = `
		SELECT e.id FROM webhooks.events AS e
		WHERE e.provider = $1 AND e.order_key = $2 AND e.order_key IS NOT NULL
		  AND e.status <> 'processed'
		  AND (e.status <> 'dead' OR coalesce((SELECT o.dead_blocks FROM webhooks.ordering AS o WHERE o.provider = $1), true))
		ORDER BY coalesce(e.order_num, 'NaN'::numeric), coalesce(e.order_text, '') COLLATE "C", e.received_at, e.id
		LIMIT 1`
)

// ReaderSQL returns the other statements the console runs on the events
// (the overview's sections, the detail of event id, in the queue and in
// history, and the head of the sequence key of provider), for the plan
// tests to EXPLAIN.
func ReaderSQL(id int64, provider, key string) []Query {
	return []Query{
		{Name: "dead", SQL: deadSQL},
		{Name: "by_provider", SQL: byProviderSQL},
		{Name: "backfills", SQL: backfillsSQL},
		{Name: "retrying", SQL: retryingSQL},
		{Name: "sequence_head", SQL: sequenceHeadSQL, Args: []any{provider, key}},
		{Name: "detail_inbox", SQL: fmt.Sprintf(eventDetailSQL, "webhooks.inbox"), Args: []any{id}},
		{Name: "detail_history", SQL: fmt.Sprintf(eventDetailSQL, "webhooks.history"), Args: []any{id}},
	}
}
