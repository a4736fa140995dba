package backfill

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Verdict says what a backfill pass would do with g given apis: "ask" (its
// provider's API is asked), "no API" (no PGINBOX_API_URL_<NAME> for the
// provider: never contacted), or "refused: <reason>" (a status_url on
// another origin, or not a URL: never requested, the gap stays open).
func Verdict(apis map[string]StatusAPI, g Gap) string {
	api := apis[g.Provider]
	if api == nil {
		return "no API"
	}
	var r *RefusedError
	if err := api.Vet(g); errors.As(err, &r) {
		return "refused: " + r.Reason
	}
	return "ask"
}

// FindGaps returns up to limit gaps (webhooks.find_gaps), oldest deadline
// first, of one provider or, when provider is empty, of all. limit <= 0
// means no limit.
func FindGaps(ctx context.Context, pool *pgxpool.Pool, provider string, limit int) ([]Gap, error) {
	var p *string
	if provider != "" {
		p = &provider
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := pool.Query(ctx, `
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
