package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ingestKind is one kind of delivery the load of TestPruneUnderConcurrentIngest
// sends, with the outcomes it accepts.
type ingestKind struct {
	name string
	call func(ctx context.Context, pool *pgxpool.Pool, g, i int, rnd *rand.Rand) (outcome string, keyKept bool, err error)
}

// latencies collects how long each call of one kind took.
type latencies struct {
	mu      sync.Mutex
	calls   map[string][]time.Duration
	errs    []string
	slowest string // the slowest call: its kind and when it started
	top     time.Duration
}

func (l *latencies) add(kind string, start time.Time, took time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls[kind] = append(l.calls[kind], took)
	if took > l.top {
		l.top = took
		l.slowest = fmt.Sprintf("%s at %s", kind, start.Format("15:04:05.000"))
	}
	if err != nil && len(l.errs) < 20 {
		l.errs = append(l.errs, fmt.Sprintf("%s: %v", kind, err))
	}
}

// summary returns, per kind, the count, the 99th percentile and the
// slowest call, and the slowest of all.
func (l *latencies) summary() (string, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	worst := time.Duration(0)
	kinds := make([]string, 0, len(l.calls))
	for k := range l.calls {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		d := append([]time.Duration(nil), l.calls[k]...)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		p99 := d[len(d)*99/100]
		top := d[len(d)-1]
		worst = max(worst, top)
		fmt.Fprintf(&b, "%s: %d calls, p99 %v, slowest %v; ", k, len(d), p99.Round(time.Millisecond), top.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "slowest: %s", l.slowest)
	return b.String(), worst
}

// TestPruneUnderConcurrentIngest: 64 days of history (2,000 events a day,
// keys with and without a body digest) are pruned to 30 days of payloads
// and 50 days of keys while 8 goroutines ingest new keys and duplicates of
// stored ones, a worker completes the new events and move_history() moves
// them into today's slice. Prune is called until it reports no more work,
// the runner's way (max_rows 5000 a call) and as documented for a person
// or a scheduler (prune(keep_payload, keep_keys), one call). No ingest call
// fails, none takes a second, and prune ends with every due day dropped,
// every key older than keep_keys deleted, the younger ones all there (each
// still a duplicate) and the kept days untouched.
//
// The cases run one after the other: each measures latencies on a machine
// the other would load.
func TestPruneUnderConcurrentIngest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("load test: skipped with -short")
	}
	for _, tc := range []struct{ name, args string }{
		{"runner", `, batch_size => 1000, max_rows => 5000`},
		{"one call", ``},
	} {
		t.Run(tc.name, func(t *testing.T) { pruneUnderIngest(t, tc.args) })
	}
}

// pruneUnderIngest is one case of TestPruneUnderConcurrentIngest: prune is
// called with args after its two intervals.
func pruneUnderIngest(t *testing.T, args string) {
	pool := NewPool(t, 16)
	ctx := context.Background()
	const fromAgo, toAgo, perDay = 2, 65, 2000
	const keepPayloadDays, keepKeysDays = 30, 50
	maxSeeded := seedHistoryDays(t, pool, fromAgo, toAgo, perDay)
	var keptSince time.Time // keys received after it must all stay
	if err := pool.QueryRow(ctx, `SELECT now() - interval '49 days'`).Scan(&keptSince); err != nil {
		t.Fatal(err)
	}
	keptKeys := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys WHERE event_id <= $1 AND received_at > $2`, maxSeeded, keptSince)
	keptEvents := queryInt(t, pool, `SELECT count(*) FROM webhooks.history
		WHERE id <= $1 AND (received_at AT TIME ZONE 'UTC')::date >= (now() AT TIME ZONE 'UTC')::date - $2::int`,
		maxSeeded, keepPayloadDays)

	// A stored key, by day and number; kept says whether keep_keys leaves
	// it for sure (a key near the cutoff may go or stay).
	storedKey := func(rnd *rand.Rand, provider string) (key string, kept bool) {
		d := fromAgo + rnd.IntN(toAgo-fromAgo+1)
		n := 2 + rnd.IntN(perDay/2)*2 // even: sp
		if provider == "sd" {
			n--
		}
		return fmt.Sprintf("k%d_%d", d, n), d < keepKeysDays-1
	}
	kinds := []ingestKind{
		{"new key", func(ctx context.Context, pool *pgxpool.Pool, g, i int, _ *rand.Rand) (string, bool, error) {
			outcome, err := ingestOutcome(ctx, pool, "sp", fmt.Sprintf("new_%d_%d", g, i), nil)
			return outcome, true, err
		}},
		{"new key with digest", func(ctx context.Context, pool *pgxpool.Pool, g, i int, _ *rand.Rand) (string, bool, error) {
			key := fmt.Sprintf("newd_%d_%d", g, i)
			outcome, err := ingestOutcome(ctx, pool, "sd", key, digest(key))
			return outcome, true, err
		}},
		{"stored key", func(ctx context.Context, pool *pgxpool.Pool, _, _ int, rnd *rand.Rand) (string, bool, error) {
			key, kept := storedKey(rnd, "sp")
			outcome, err := ingestOutcome(ctx, pool, "sp", key, nil)
			return outcome, kept, err
		}},
		{"stored key with digest", func(ctx context.Context, pool *pgxpool.Pool, _, _ int, rnd *rand.Rand) (string, bool, error) {
			key, kept := storedKey(rnd, "sd")
			outcome, err := ingestOutcome(ctx, pool, "sd", key, digest(key))
			return outcome, kept, err
		}},
		{"stored body under a new key", func(ctx context.Context, pool *pgxpool.Pool, g, i int, rnd *rand.Rand) (string, bool, error) {
			key, kept := storedKey(rnd, "sd")
			outcome, err := ingestOutcome(ctx, pool, "sd", fmt.Sprintf("other_%d_%d", g, i), digest(key))
			return outcome, kept, err
		}},
		{"stored signed key with a digest", func(ctx context.Context, pool *pgxpool.Pool, _, _ int, rnd *rand.Rand) (string, bool, error) {
			key, kept := storedKey(rnd, "sp")
			outcome, err := ingestOutcome(ctx, pool, "sp", key, digest("other body of "+key))
			return outcome, kept, err
		}},
	}

	lat := &latencies{calls: map[string][]time.Duration{}}
	var measuring atomic.Bool // after the warm-up: a connection's first calls plan the view over every slice
	var wrong atomic.Int64
	var wrongFirst atomic.Pointer[string]
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 36))
			for i := 0; loadCtx.Err() == nil; i++ {
				k := kinds[i%len(kinds)]
				start := time.Now()
				outcome, kept, err := k.call(ctx, pool, g, i, rnd)
				if measuring.Load() {
					lat.add(k.name, start, time.Since(start), err)
				} else if err != nil {
					lat.add("warm-up", start, 0, err)
				}
				want := "duplicate"
				if strings.HasPrefix(k.name, "new") {
					want = "created"
				}
				if err == nil && outcome != want && (want == "created" || kept) {
					if wrong.Add(1) == 1 {
						s := fmt.Sprintf("%s: %s, want %s", k.name, outcome, want)
						wrongFirst.Store(&s)
					}
				}
			}
		}()
	}
	// A worker completes the new events; move_history moves them.
	var moveErr, workErr atomic.Pointer[error]
	var moveSlowest atomic.Int64
	wg.Add(2)
	go func() {
		defer wg.Done()
		for loadCtx.Err() == nil {
			_, err := pool.Exec(ctx, `
				SELECT webhooks.complete(c.id, 'lw', c.attempts) FROM webhooks.claim('lw', 200, '1 minute') AS c`)
			if err != nil {
				firstErr(&workErr, err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	go func() {
		defer wg.Done()
		for loadCtx.Err() == nil {
			start := time.Now()
			_, err := pool.Exec(ctx, `SELECT webhooks.move_history(1000)`)
			if took := time.Since(start); int64(took) > moveSlowest.Load() {
				moveSlowest.Store(int64(took))
			}
			if err != nil {
				firstErr(&moveErr, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	time.Sleep(time.Second)
	measuring.Store(true)
	start := time.Now()
	var keysCutoff time.Time // every prune call's cutoff is at least this late
	if err := pool.QueryRow(ctx, `SELECT now() - $1::int * interval '1 day'`, keepKeysDays).Scan(&keysCutoff); err != nil {
		t.Fatal(err)
	}
	days := int64(0)
	calls := 0
	for {
		out, err := pruneCall(ctx, pool, fmt.Sprintf("%d days", keepPayloadDays), fmt.Sprintf("%d days", keepKeysDays), args)
		if err != nil {
			stopLoad()
			wg.Wait()
			t.Fatal(err)
		}
		calls++
		days += out.Days
		if !out.More {
			break
		}
		if calls > 500 {
			stopLoad()
			wg.Wait()
			t.Fatalf("prune still reports more after %d calls: %+v", calls, out)
		}
	}
	pruneTook := time.Since(start)
	t.Logf("prune ran from %s to %s", start.Format("15:04:05.000"), time.Now().Format("15:04:05.000"))
	time.Sleep(500 * time.Millisecond)
	stopLoad()
	wg.Wait()

	summary, worst := lat.summary()
	t.Logf("prune: %d days dropped in %d calls, %v; move_history slowest %v; ingest %s",
		days, calls, pruneTook.Round(time.Millisecond), time.Duration(moveSlowest.Load()).Round(time.Millisecond), summary)
	if len(lat.errs) > 0 {
		t.Errorf("ingest calls failed during prune: %s", strings.Join(lat.errs, "; "))
	}
	if worst > time.Second {
		t.Errorf("an ingest call took %v during prune, over 1 s (%s)", worst, summary)
	}
	if n := wrong.Load(); n > 0 {
		t.Errorf("%d ingest calls answered wrongly, first %s", n, *wrongFirst.Load())
	}
	for name, p := range map[string]*atomic.Pointer[error]{"move_history": &moveErr, "the worker": &workErr} {
		if err := p.Load(); err != nil {
			t.Errorf("%s failed during prune: %v", name, *err)
		}
	}

	// Every due day dropped, slice and all; the kept days and keys intact.
	if want := int64(toAgo - keepPayloadDays); days != want {
		t.Errorf("prune dropped %d days, want %d", days, want)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.history_days
		WHERE day < ((now() - $1::int * interval '1 day') AT TIME ZONE 'UTC')::date
		  AND (state <> 'dropped' OR to_regclass('webhooks.history_' || to_char(day, 'YYYYMMDD')) IS NOT NULL)`,
		keepPayloadDays); n != 0 {
		t.Errorf("%d days older than keep_payload still live or with a slice", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys WHERE event_id <= $1 AND received_at < $2`,
		maxSeeded, keysCutoff); n != 0 {
		t.Errorf("%d keys older than keep_keys left", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys WHERE event_id <= $1 AND received_at > $2`, maxSeeded, keptSince); n != keptKeys {
		t.Errorf("%d keys younger than keep_keys left of %d", n, keptKeys)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.history WHERE id <= $1`, maxSeeded); n != keptEvents {
		t.Errorf("%d events of the kept days left of %d", n, keptEvents)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.inbox WHERE status = 'processed'`); n > 0 {
		moveAll(t, pool)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.inbox WHERE status = 'processed'`); n != 0 {
		t.Errorf("%d processed events left in the queue", n)
	}
}

// ingestOutcome calls ingest_webhook (with body_sha256 when sum is not
// nil) and returns its outcome.
func ingestOutcome(ctx context.Context, pool *pgxpool.Pool, provider, key string, sum []byte) (string, error) {
	var outcome string
	err := pool.QueryRow(ctx, `
		SELECT outcome FROM webhooks.ingest_webhook($1, $2, 'thing.happened', jsonb_build_object('key', $2::text),
		                                            body_sha256 => $3)`,
		provider, key, sum).Scan(&outcome)
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("ingest_webhook %s/%s returned no row", provider, key)
	}
	return outcome, err
}

// firstErr keeps the first error of a background loop.
func firstErr(p *atomic.Pointer[error], err error) {
	p.CompareAndSwap(nil, &err)
}
