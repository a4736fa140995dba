package backfill

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/status"
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

// FindGaps returns up to limit gaps of one provider (all when provider is
// empty), oldest deadline first ([status.FindGaps]), as the gaps a pass asks
// the providers' APIs about. limit <= 0 means no limit.
func FindGaps(ctx context.Context, pool *pgxpool.Pool, provider string, limit int) ([]Gap, error) {
	found, err := status.FindGaps(ctx, pool, provider, limit)
	if err != nil {
		return nil, err
	}
	gaps := make([]Gap, len(found))
	for i, g := range found {
		gaps[i] = Gap(g)
	}
	return gaps, nil
}
