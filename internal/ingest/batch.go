package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/pginbox/pginbox/internal/metrics"
)

// batchSQL stores a batch with one webhooks.ingest_batch() call in a
// transaction of its own, durable like ingestSQL (see there for the
// synchronous_commit clause, and for the WAL record a duplicate writes so
// that its commit waits for the stored row to be confirmed).
const batchSQL = `SELECT ordinal, coalesce(event_id, 0), outcome, coalesce(error, '')
	FROM webhooks.ingest_batch($1, $2, $3, $4::text[]::jsonb[], body_sha256s => $5, trace_parents => $6)
	WHERE set_config('synchronous_commit', CASE current_setting('synchronous_commit')
		WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END, true) IS NOT NULL
	AND (outcome <> 'duplicate' OR current_setting('synchronous_standby_names') = ''
		OR pg_logical_emit_message(true, 'pginbox', 'duplicate acknowledged') IS NOT NULL)
	ORDER BY ordinal`

// delivery is one verified delivery waiting for its batch.
type delivery struct {
	ctx                      context.Context
	provider, key, eventType string
	payload                  []byte
	digest                   []byte  // nil for a signed key
	traceParent              *string // the delivery span's W3C traceparent, nil without tracing
	queued                   time.Time
	done                     chan stored // buffered: a flusher never blocks on it
	relocks                  int         // times queued again: its ordered sequence was locked
}

// stored is a delivery's own outcome.
type stored struct {
	res ingestResult
	err error
}

// batcher is group commit for ingest: deliveries that arrive while every
// flusher is busy committing are stored together by the next free one, in
// one transaction and one WAL flush, and each is answered with its own
// outcome after that commit. A delivery that finds a flusher idle is stored
// at once, alone: nothing waits for a timer, so a lone delivery is never
// delayed and batches grow only as fast as commits fall behind arrivals.
type batcher struct {
	pool     *pgxpool.Pool
	max      int // largest batch
	flushers int // batch transactions in flight at once
	timeout  time.Duration
	metrics  *metrics.Set
	// single stores one delivery alone: the fallback for a batch the
	// database refuses as a whole.
	single func(ctx context.Context, d *delivery) (ingestResult, error)

	mu     sync.Mutex
	queue  []*delivery
	active int
}

// store queues d and waits for its outcome or for ctx to end (the request's
// deadline: the delivery may still be committed, and a retry is then a
// duplicate).
func (b *batcher) store(ctx context.Context, d *delivery) (ingestResult, error) {
	d.ctx, d.queued, d.done = ctx, time.Now(), make(chan stored, 1)
	b.mu.Lock()
	b.queue = append(b.queue, d)
	if b.active < b.flushers {
		b.active++
		go b.flush()
	}
	b.mu.Unlock()
	select {
	case s := <-d.done:
		return s.res, s.err
	case <-ctx.Done():
		return ingestResult{}, fmt.Errorf("waiting for the batch commit: %w", ctx.Err())
	}
}

// flush stores batches until the queue is empty.
func (b *batcher) flush() {
	for {
		b.mu.Lock()
		var batch []*delivery
		for len(b.queue) > 0 && len(batch) < b.max {
			d := b.queue[0]
			b.queue[0] = nil
			b.queue = b.queue[1:]
			if d.ctx.Err() == nil { // its sender stopped waiting: not stored
				batch = append(batch, d)
			}
		}
		if len(batch) == 0 {
			b.active--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.run(batch)
	}
}

// run stores one batch and answers each of its deliveries.
func (b *batcher) run(batch []*delivery) {
	start := time.Now()
	for _, d := range batch {
		b.metrics.IngestBatchWait.Observe(start.Sub(d.queued).Seconds())
	}
	b.metrics.IngestBatchSize.Observe(float64(len(batch)))
	// The batch gives up when the first of its deliveries does: a delivery
	// answered 503 must not be stored after its answer by a batch that
	// outlived it.
	deadline := time.Now().Add(b.timeout)
	for _, d := range batch {
		if dl, ok := d.ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	// The statement's database span goes under the first delivery's span
	// (one statement serves them all).
	ctx = trace.ContextWithSpan(ctx, trace.SpanFromContext(batch[0].ctx))
	results, err := b.write(ctx, batch)
	if err != nil && permanent(err) != nil {
		// One delivery the database refuses (a value Go let through) must
		// not cost its neighbours their answers: store each alone.
		var wg sync.WaitGroup
		for _, d := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := b.single(d.ctx, d)
				d.done <- stored{res, err}
			}()
		}
		wg.Wait()
		return
	}
	// A commit not confirmed (see confirmed) answers every delivery of the
	// batch 503, also one whose own deadline had not passed yet.
	countUnconfirmed(b.metrics, err, len(batch))
	for i, d := range batch {
		if err != nil {
			d.done <- stored{err: err}
			continue
		}
		if wait := lockRetryFirst << d.relocks; sequenceLocked(results[i].err) &&
			time.Since(d.queued)+wait < lockRetryFor && d.ctx.Err() == nil {
			// Its ordered sequence is locked by another transaction: offer
			// it to a later batch, then answer 503.
			d.relocks++
			time.AfterFunc(wait, func() { b.requeue(d) })
			continue
		}
		d.done <- results[i]
	}
}

// A delivery whose ordered sequence ingest_batch found locked past its
// wait (outcome retry, nothing stored) goes back to the queue after
// lockRetryFirst, then twice as long each time, while that ends within
// lockRetryFor of its first queueing; then it is answered 503. Few offers:
// each waits for the lock in a batch shared with other deliveries.
const (
	lockRetryFor   = time.Second
	lockRetryFirst = 50 * time.Millisecond
)

// sequenceLocked reports whether err is ingest_batch's retry outcome.
func sequenceLocked(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// requeue queues d again, starting a flusher if none is free.
func (b *batcher) requeue(d *delivery) {
	b.mu.Lock()
	b.queue = append(b.queue, d)
	if b.active < b.flushers {
		b.active++
		go b.flush()
	}
	b.mu.Unlock()
}

// write runs the batch statement, again after a deadlock or serialization
// failure (two batches holding one unsigned body under different keys).
func (b *batcher) write(ctx context.Context, batch []*delivery) ([]stored, error) {
	providers, keys, types, payloads := make([]string, len(batch)), make([]string, len(batch)), make([]string, len(batch)), make([]string, len(batch))
	digests, traces := make([][]byte, len(batch)), make([]*string, len(batch))
	for i, d := range batch {
		providers[i], keys[i], types[i], payloads[i], digests[i], traces[i] = d.provider, d.key, d.eventType, string(d.payload), d.digest, d.traceParent
	}
	var err error
	for try := 0; try < 3; try++ {
		var out []stored
		if out, err = b.query(ctx, providers, keys, types, payloads, digests, traces); err == nil {
			return out, nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "40P01" && pgErr.Code != "40001") {
			return nil, err
		}
	}
	return nil, err
}

func (b *batcher) query(ctx context.Context, providers, keys, types, payloads []string, digests [][]byte, traces []*string) ([]stored, error) {
	start := time.Now()
	defer func() { b.metrics.IngestCommitSeconds.Observe(time.Since(start).Seconds()) }()
	out := make([]stored, len(providers))
	n := 0
	err := confirmed(ctx, b.pool, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, batchSQL, providers, keys, types, payloads, digests, traces)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ord int
			var s stored
			var refused string
			if err := rows.Scan(&ord, &s.res.EventID, &s.res.Outcome, &refused); err != nil {
				return err
			}
			if ord < 1 || ord > len(out) {
				return fmt.Errorf("ordinal %d out of 1..%d", ord, len(out))
			}
			switch s.res.Outcome {
			case "refused":
				s = stored{err: &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: refused}}
			case "retry": // its ordered sequence stayed locked elsewhere: nothing stored (see run)
				s = stored{err: &pgconn.PgError{Severity: "ERROR", Code: "55P03", Message: refused}}
			}
			out[ord-1] = s
			n++
		}
		// Err after Next's end: the commit's outcome, the notices it
		// raised already read.
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("ingest_batch: %w", err)
	}
	if n != len(out) {
		return nil, fmt.Errorf("ingest_batch: %d rows for %d deliveries", n, len(out))
	}
	return out, nil
}
