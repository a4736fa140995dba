package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// timedCall is one ingest_webhook() call of an ingestLoad: when it started,
// how long it took, whether it failed.
type timedCall struct {
	start  time.Time
	ms     float64
	failed bool
}

// ingestLoad is ingest_webhook() called in a loop on every connection of a
// pool, new unique keys of one provider, until stopped, recording every
// call: the load that runs while something else is measured (prune) and
// whose waits are the measurement.
type ingestLoad struct {
	provider string
	conns    int
	cursor   atomic.Int64
	stop     chan struct{}
	wg       sync.WaitGroup

	mu       sync.Mutex
	calls    []timedCall
	acked    []int64
	outcomes map[string]int64
	errs     int64
	firstErr string
}

// startIngestLoad starts conns callers on pool.
func startIngestLoad(ctx context.Context, pool *pgxpool.Pool, conns int, provider string) *ingestLoad {
	l := &ingestLoad{provider: provider, conns: conns, stop: make(chan struct{}), outcomes: map[string]int64{}}
	call := callIngest(ingestSQL)
	for g := 0; g < conns; g++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			conn, err := pool.Acquire(ctx)
			if err != nil {
				l.record(nil, nil, nil, 1, err.Error())
				return
			}
			defer conn.Release()
			var calls []timedCall
			var acked []int64
			out := map[string]int64{}
			var errs int64
			first := ""
			for ctx.Err() == nil {
				select {
				case <-l.stop:
					l.record(calls, acked, out, errs, first)
					return
				default:
				}
				ev := l.cursor.Add(1) - 1
				key := eventKey(provider, ev)
				t0 := time.Now()
				outcome, err := call(ctx, conn.Conn(), provider, key, sumePayload(key))
				c := timedCall{start: t0, ms: float64(time.Since(t0)) / 1e6, failed: err != nil}
				calls = append(calls, c)
				if err != nil {
					errs++
					if first == "" && ctx.Err() == nil {
						first = err.Error()
					}
					continue
				}
				out[outcome]++
				acked = append(acked, ev)
			}
			l.record(calls, acked, out, errs, first)
		}()
	}
	return l
}

func (l *ingestLoad) record(calls []timedCall, acked []int64, out map[string]int64, errs int64, first string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, calls...)
	l.acked = append(l.acked, acked...)
	for k, n := range out {
		l.outcomes[k] += n
	}
	l.errs += errs
	if l.firstErr == "" {
		l.firstErr = first
	}
}

// finish stops the callers and waits for the calls in flight.
func (l *ingestLoad) finish() {
	close(l.stop)
	l.wg.Wait()
}

// window summarises the calls that were in flight at any moment between
// from and to: their times, how many failed, and calls per second.
func (l *ingestLoad) window(from, to time.Time) (d dist, n, failed int64, perS float64) {
	var ms []float64
	for _, c := range l.calls {
		end := c.start.Add(time.Duration(c.ms * 1e6))
		if c.start.After(to) || end.Before(from) {
			continue
		}
		ms = append(ms, c.ms)
		n++
		if c.failed {
			failed++
		}
	}
	if secs := to.Sub(from).Seconds(); secs > 0 {
		perS = round1(float64(n) / secs)
	}
	return msDist(ms), n, failed, perS
}

// auditInput is the load's acknowledged keys for the exactly-once audit.
func (l *ingestLoad) auditInput(scenario, table string, since time.Time) auditInput {
	keys := make([][2]string, len(l.acked))
	for i, ev := range l.acked {
		keys[i] = [2]string{l.provider, eventKey(l.provider, ev)}
	}
	return auditInput{scenario: scenario, table: table, providers: []string{l.provider}, acked: keys,
		deliveries: int64(len(l.calls)), errors: l.errs, createdAnswers: l.outcomes["created"], since: since}
}
