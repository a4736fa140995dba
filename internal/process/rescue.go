package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgconn"
)

// rescueOwn takes back the events still processing under this worker's
// name (webhooks.rescue_worker()), as lease expiry would but without the
// wait: the worker calls it before its next claim once it may have lost
// track of a lease (see Workers.loop). Worker names are unique to the
// process and the goroutine (runner: host:pid:token/wN), and the worker
// holds nothing between batches, so it never takes back a lease that is
// being worked on.
//
// It returns whether the worker must still call it (the statement did not
// go through: the network may still be down) and that error. An error the
// server answered that waiting cannot cure (a missing privilege) is logged
// and dropped: the leases then expire and are rescued as before.
func (w *Workers) rescueOwn(ctx context.Context, log *slog.Logger, name string) (stale bool, err error) {
	bctx, cancel := bounded(ctx)
	defer cancel()
	var rescued, dead int
	err = w.Pool.QueryRow(bctx, `SELECT rescued, dead FROM webhooks.rescue_worker($1)`, name).Scan(&rescued, &dead)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code[:2] == "42" || pgErr.Code[:2] == "22") {
			log.Warn("could not take back this worker's lost leases; they will expire and be rescued", "error", err)
			return false, nil
		}
		return true, fmt.Errorf("rescue_worker: %w", err)
	}
	if rescued+dead > 0 {
		log.Warn("took back events this worker had claimed but lost track of (a reply or an outcome the connection lost)",
			"rescued", rescued, "dead", dead)
	}
	return false, nil
}
