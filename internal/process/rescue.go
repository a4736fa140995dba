package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// rescueRetry is how long a stale worker waits before it calls
// rescue_worker() again, after a call that failed or that left rows another
// transaction still holds. It goes on claiming meanwhile.
const rescueRetry = time.Second

// rescueState is what one worker knows about leases it may have lost
// track of.
type rescueState struct {
	// stale says this worker may still hold leases under its name that it
	// lost track of (a claim whose reply a broken connection lost, an
	// outcome it could not record): it takes them back (rescueOwn) before
	// its next claim, and again every rescueRetry until nothing is left.
	stale bool
	// next is when rescueOwn is due again.
	next time.Time
	// warnedHeld says the worker already logged that another transaction
	// holds some of them.
	warnedHeld bool
}

// markStale notes that the worker may have lost track of a lease: it takes
// its leases back before its next claim.
func (s *rescueState) markStale() {
	s.stale, s.next = true, time.Time{}
}

// due says whether rescueOwn should run now.
func (s *rescueState) due() bool {
	return s.stale && !time.Now().Before(s.next)
}

// wait is how long an idle worker may sleep before rescueOwn is due, at
// most d.
func (s *rescueState) wait(d time.Duration) time.Duration {
	if !s.stale {
		return d
	}
	return max(min(d, time.Until(s.next)), 0)
}

// rescueOwn takes back the events still processing under this worker's
// name (webhooks.rescue_worker()), as lease expiry would but without the
// wait: the worker calls it before its next claim once it may have lost
// track of a lease (see Workers.loop). Worker names are unique to the
// process and the goroutine (runner: host:pid:token/wN), and the worker
// holds nothing between batches, so it never takes back a lease that is
// being worked on.
//
// rescue_worker() never waits for a row lock: rows another transaction
// still holds — the worker's own batch transaction on a connection that
// broke, which the server has not ended yet — are skipped and counted. The
// worker then stays stale and calls it again rescueRetry later, claiming
// meanwhile; so it does after a statement that did not go through (the
// network may still be down), whose error it returns. An error the server
// answered that waiting cannot cure (a missing privilege) is logged and
// dropped: the leases then expire and are rescued as before.
func (w *Workers) rescueOwn(ctx context.Context, log *slog.Logger, name string, s *rescueState) error {
	s.next = time.Now().Add(rescueRetry)
	bctx, cancel := bounded(ctx)
	defer cancel()
	var rescued, dead, held int
	err := w.Pool.QueryRow(bctx, `SELECT rescued, dead, held FROM webhooks.rescue_worker($1)`, name).Scan(&rescued, &dead, &held)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code[:2] == "42" || pgErr.Code[:2] == "22") {
			log.Warn("could not take back this worker's lost leases; they will expire and be rescued", "error", err)
			*s = rescueState{}
			return nil
		}
		return fmt.Errorf("rescue_worker: %w", err)
	}
	if rescued+dead > 0 {
		log.Warn("took back events this worker had claimed but lost track of (a reply or an outcome the connection lost)",
			"rescued", rescued, "dead", dead)
	}
	if held > 0 {
		if !s.warnedHeld {
			log.Warn("events this worker lost track of are still held by another transaction (its own, on a broken "+
				"connection the server has not ended yet); claiming meanwhile, and taking them back once it ends",
				"held", held, "retry_every", rescueRetry)
			s.warnedHeld = true
		}
		return nil
	}
	*s = rescueState{}
	return nil
}
