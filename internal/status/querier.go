package status

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Querier is a pool, one of its connections or a transaction: the reads
// run on whatever the caller holds (the metrics read everything on one
// connection per scrape).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
