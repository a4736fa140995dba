package metrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/status"
)

// readTimeout bounds one read of the database gauges.
const readTimeout = 2 * time.Second

// dbReader reads the gauges that come from the database (queue depth,
// checks) for every scrape at once: one read in flight, on one connection,
// whose answer every scrape that asked meanwhile shares. A loop of scrapes
// (or a DNS-rebinding page) thus holds at most one of the console's
// connections, and the console's pages keep the other.
type dbReader struct {
	pool     *pgxpool.Pool
	mu       sync.Mutex
	inflight *dbRead
}

// dbRead is one read of the database gauges; done closes when it is set.
type dbRead struct {
	done      chan struct{}
	queue     status.Queue
	queueErr  error
	checks    []checkRow
	checksErr error
	order     status.OrderCounts
	orderErr  error
}

// checkRow is one enabled check's latest result.
type checkRow struct {
	name, family string
	ok           *bool
	value        *float64
}

// read joins the read in flight or starts one, and returns its result.
func (d *dbReader) read() *dbRead {
	d.mu.Lock()
	r := d.inflight
	if r == nil {
		r = &dbRead{done: make(chan struct{})}
		d.inflight = r
		go func() {
			d.fill(r)
			d.mu.Lock()
			d.inflight = nil
			d.mu.Unlock()
			close(r.done)
		}()
	}
	d.mu.Unlock()
	<-r.done
	return r
}

// fill reads the queue, the checks and the ordering counts on one connection.
func (d *dbReader) fill(r *dbRead) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		r.queueErr = fmt.Errorf("metrics: acquire a connection: %w", err)
		r.checksErr = r.queueErr
		r.orderErr = r.queueErr
		return
	}
	defer conn.Release()
	r.queue, r.queueErr = status.ReadQueue(ctx, conn)
	r.checks, r.checksErr = readChecks(ctx, conn)
	r.order, r.orderErr = status.ReadOrderCounts(ctx, conn)
}

// readChecks returns every enabled check with its latest result (ok and
// value NULL for one that has not run yet).
func readChecks(ctx context.Context, q status.Querier) ([]checkRow, error) {
	rows, err := q.Query(ctx, `SELECT name, family, ok, value::float8 FROM webhooks.check_status WHERE enabled`)
	if err != nil {
		return nil, fmt.Errorf("metrics: read the checks: %w", err)
	}
	defer rows.Close()
	var out []checkRow
	for rows.Next() {
		var c checkRow
		if err := rows.Scan(&c.name, &c.family, &c.ok, &c.value); err != nil {
			return nil, fmt.Errorf("metrics: read the checks: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read the checks: %w", err)
	}
	return out, nil
}
