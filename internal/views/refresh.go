// Package views refreshes the materialized views the anomaly checks read.
// The runner's checks schedule and `pginbox checks` share it.
package views

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Refresh refreshes every view listed in webhooks.view_refreshes, one per
// short transaction (webhooks.refresh_view). webhooks.refresh_views() would
// refresh them all in one transaction, holding one snapshot, and so the
// oldest xmin, across all of them.
func Refresh(ctx context.Context, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `SELECT view_name FROM webhooks.view_refreshes ORDER BY view_name`)
	if err != nil {
		return fmt.Errorf("refresh views: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("refresh views: %w", err)
	}
	for _, v := range names {
		if _, err := pool.Exec(ctx, `SELECT webhooks.refresh_view($1)`, v); err != nil {
			return fmt.Errorf("refresh view %s: %w", v, err)
		}
	}
	return nil
}
