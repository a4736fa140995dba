package status

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Gap is one expected event that did not arrive (a row of
// webhooks.find_gaps).
type Gap struct {
	// Provider is the provider the event was expected from.
	Provider string `json:"provider"`
	// ExternalID is the provider's id of the expected event.
	ExternalID string `json:"external_id"`
	// StatusURL is the provider's status URL given to webhooks.expect, empty
	// when none was given or the caller may not read it.
	StatusURL string `json:"status_url,omitempty"`
	// Deadline is when the event should have arrived by.
	Deadline time.Time `json:"deadline"`
	// Backfill is what a backfill pass would do with the gap, which
	// `pginbox gaps --backfill` fills in; FindGaps leaves it empty.
	Backfill string `json:"backfill,omitempty" db:"-"`
}

// FindGaps returns up to limit gaps (webhooks.find_gaps), oldest deadline
// first, of one provider or, when provider is empty, of all. limit <= 0
// means no limit. A reader role reads every status URL empty
// (webhooks.find_gaps masks them).
func FindGaps(ctx context.Context, q Querier, provider string, limit int) ([]Gap, error) {
	var p *string
	if provider != "" {
		p = &provider
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := q.Query(ctx, `
		SELECT g.provider, g.external_id, coalesce(g.status_url, ''), g.deadline
		FROM webhooks.find_gaps($1) AS g
		LIMIT $2`, p, lim)
	if err != nil {
		return nil, fmt.Errorf("find gaps: %w", err)
	}
	gaps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Gap])
	if err != nil {
		return nil, fmt.Errorf("find gaps: %w", err)
	}
	return gaps, nil
}
