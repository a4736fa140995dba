package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// orderedHandlerSQL creates app.runs and app.ordered(webhooks.events), a
// handler that records, for each run, the events of its sequence that sort
// before it and were neither processed nor already run in the same
// transaction at that moment (a row-lock batch runs a run of a sequence in
// order in one transaction, and marks it processed at its end; early_open: none when
// all were stored before processing began; else each must be a late arrival
// that ran after it, marked out_of_order) and whether a later one already
// was processed (later_done: the run is out of order and the event must end
// up marked so). It raises for an event whose
// payload says "fail" while app.failing holds its external_id.
const orderedHandlerSQL = `
	CREATE SCHEMA app;
	CREATE TABLE app.runs (n bigserial PRIMARY KEY, event_id bigint NOT NULL, external_id text NOT NULL,
	    k text, num numeric, early_open bigint[] NOT NULL, later_done boolean NOT NULL);
	CREATE TABLE app.failing (external_id text PRIMARY KEY);
	CREATE FUNCTION app.ordered(e webhooks.events) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
	    IF EXISTS (SELECT FROM app.failing AS f WHERE f.external_id = e.external_id) THEN
	        RAISE EXCEPTION 'app: % fails', e.external_id;
	    END IF;
	    IF e.payload ? 'sleep' THEN
	        PERFORM pg_sleep((e.payload->>'sleep')::float8);
	    END IF;
	    INSERT INTO app.runs (event_id, external_id, k, num, early_open, later_done)
	    SELECT e.id, e.external_id, e.order_key, e.order_num,
	        ARRAY(SELECT x.id FROM webhooks.events AS x
	         WHERE x.provider = e.provider AND x.order_key = e.order_key AND x.id <> e.id
	           AND x.status <> 'processed'
	           AND NOT EXISTS (SELECT FROM app.runs AS d WHERE d.event_id = x.id)
	           AND (x.order_num, x.received_at, x.id) < (e.order_num, e.received_at, e.id)),
	        EXISTS (SELECT FROM webhooks.events AS x
	         WHERE x.provider = e.provider AND x.order_key = e.order_key AND x.id <> e.id
	           AND x.status = 'processed'
	           AND (x.order_num, x.received_at, x.id) > (e.order_num, e.received_at, e.id));
	END $$;`

// orderedEvent is one event of a test sequence: key k, order value n.
type orderedEvent struct {
	k  string
	n  int
	id string
}

// orderedEvents returns keys x perKey events, each keyed by customer and
// ordered by seq, plus unordered extras (no customer), shuffled.
func orderedEvents(keys, perKey, unordered int) []orderedEvent {
	var evs []orderedEvent
	for k := 0; k < keys; k++ {
		for n := 1; n <= perKey; n++ {
			evs = append(evs, orderedEvent{k: fmt.Sprintf("cus_%03d", k), n: n, id: fmt.Sprintf("evt_%03d_%03d", k, n)})
		}
	}
	for i := 0; i < unordered; i++ {
		evs = append(evs, orderedEvent{n: i, id: fmt.Sprintf("evt_u_%04d", i)})
	}
	rand.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	return evs
}

// payload is the event's JSON: a Stripe-like envelope.
func (e orderedEvent) payload(extra string) string {
	if e.k == "" {
		return fmt.Sprintf(`{"id": %q, "seq": %d%s}`, e.id, e.n, extra)
	}
	return fmt.Sprintf(`{"id": %q, "seq": %d, "data": {"object": {"customer": %q}}%s}`, e.id, e.n, e.k, extra)
}

// ingestOrdered stores evs for provider from goroutines senders at once.
func ingestOrdered(t *testing.T, pool *pgxpool.Pool, provider string, evs []orderedEvent, senders int, extra string) {
	t.Helper()
	if err := ingestOrderedErr(pool, provider, evs, senders, extra); err != nil {
		t.Fatal(err)
	}
}

// ingestOrderedErr is ingestOrdered for a goroutine of a test: it returns
// the first error instead of failing the test.
func ingestOrderedErr(pool *pgxpool.Pool, provider string, evs []orderedEvent, senders int, extra string) error {
	work := make(chan orderedEvent, len(evs))
	for _, e := range evs {
		work <- e
	}
	close(work)
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range work {
				if _, err := pool.Exec(context.Background(), `SELECT webhooks.ingest_webhook($1, $2, 'customer.updated', $3::jsonb)`,
					provider, e.id, e.payload(extra)); err != nil {
					errs <- fmt.Errorf("ingest %s: %w", e.id, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// claimWorkers runs workers goroutines that claim (webhooks.claim, up to
// batch at a time, each claim in a transaction of its own) and run
// app.ordered then complete() in one transaction per event, until stop
// returns true and nothing is left to claim. The first error stops every
// worker (the failed worker's claimed events would never finish, and the
// others would wait for them for ever) and fails the test.
func claimWorkers(t *testing.T, pool *pgxpool.Pool, workers, batch int, stop func() bool) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	var failed atomic.Bool
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(worker string) {
			defer wg.Done()
			for !failed.Load() {
				got, err := claimBatch(ctx, pool, worker, batch)
				if err != nil {
					failed.Store(true)
					errs <- err
					return
				}
				if len(got) == 0 {
					if stop() {
						return
					}
					continue
				}
				for _, c := range got {
					err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
						if _, err := tx.Exec(ctx, `SELECT app.ordered(e) FROM webhooks.events AS e WHERE e.id = $1`, c.ID); err != nil {
							return err
						}
						var ok bool
						if err := tx.QueryRow(ctx, `SELECT webhooks.complete($1, $2, $3)`, c.ID, worker, c.Attempts).Scan(&ok); err != nil {
							return err
						}
						if !ok {
							return fmt.Errorf("event %d: lease lost", c.ID)
						}
						return nil
					})
					if err != nil {
						failed.Store(true)
						errs <- fmt.Errorf("%s: event %d: %w", worker, c.ID, err)
						return
					}
				}
			}
		}(fmt.Sprintf("w%d", w))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// setupOrdered creates the handler and turns ordering on for provider.
func setupOrdered(t *testing.T, pool *pgxpool.Pool, provider string) {
	t.Helper()
	execSQL(t, pool, orderedHandlerSQL)
	execSQL(t, pool, `SELECT webhooks.set_ordering($1, '$.data.object.customer', '$.seq')`, provider)
}

// auditOrder checks app.runs after everything of provider was processed:
// each event ran exactly once (want of them), no run started while an
// earlier event of its sequence was unfinished, out_of_order is set on
// exactly the events that ran after a later one had run, and with strict
// (every event stored before processing began) each sequence ran in order
// and nothing is out of order.
func auditOrder(t *testing.T, pool *pgxpool.Pool, provider string, want int64, strict bool) {
	t.Helper()
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1 AND status = 'processed'`, provider); n != want {
		t.Fatalf("%d events processed, want %d", n, want)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.runs`); n != want {
		t.Errorf("%d handler runs, want %d (exactly once)", n, want)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM (SELECT event_id FROM app.runs GROUP BY 1 HAVING count(*) > 1) AS d`); n != 0 {
		t.Errorf("%d events ran more than once", n)
	}
	// An earlier event still open when a run started arrived after that
	// event was handed out: it must have waited, and so run late.
	if n := queryInt(t, pool, `SELECT count(*) FROM app.runs AS r CROSS JOIN LATERAL unnest(r.early_open) AS x(id)
		JOIN webhooks.events AS e ON e.id = x.id WHERE NOT e.out_of_order`); n != 0 {
		t.Errorf("%d events were open before a later event of their sequence ran, yet not marked out_of_order", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.runs AS r JOIN webhooks.events AS e ON e.id = r.event_id
		WHERE e.out_of_order <> r.later_done`); n != 0 {
		t.Errorf("%d events whose out_of_order disagrees with what their run saw", n)
	}
	if !strict {
		return
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.runs WHERE cardinality(early_open) > 0`); n != 0 {
		t.Errorf("%d runs started while an earlier event of their sequence was not processed", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1 AND out_of_order`, provider); n != 0 {
		t.Errorf("%d events marked out of order, though all were stored before processing", n)
	}
	// Run order (n) within each key against order value: no inversion.
	if n := queryInt(t, pool, `SELECT count(*) FROM app.runs AS a JOIN app.runs AS b ON a.k = b.k
		WHERE a.k IS NOT NULL AND a.num < b.num AND a.n > b.n`); n != 0 {
		t.Errorf("%d pairs of one sequence ran in the wrong order", n)
	}
}

// TestOrderingClaimConcurrentWorkers: 40 customers x 15 events plus 100
// unordered events, stored in random order, are claimed by 8 goroutines
// on their own connections with webhooks.claim(). Stored first, every
// sequence runs in order; stored while the workers run (4 senders), no
// event ever runs while an earlier one of its sequence is unfinished, and
// exactly the late arrivals are marked out_of_order. Each event runs once.
func TestOrderingClaimConcurrentWorkers(t *testing.T) {
	t.Parallel()
	for _, live := range []bool{false, true} {
		name := map[bool]string{false: "stored first", true: "stored while claiming"}[live]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := NewPool(t, 14)
			setupOrdered(t, pool, "stripe")
			evs := orderedEvents(40, 15, 100)
			if !live {
				ingestOrdered(t, pool, "stripe", evs, 4, "")
				claimWorkers(t, pool, 8, 10, func() bool { return true })
			} else {
				var done sync.WaitGroup
				done.Add(1)
				var finished bool
				var ingestErr error
				var mu sync.Mutex
				go func() {
					defer done.Done()
					err := ingestOrderedErr(pool, "stripe", evs, 4, "")
					mu.Lock()
					finished, ingestErr = true, err
					mu.Unlock()
				}()
				// A failed ingest stops the workers (what it did not store
				// would never come) and fails the test.
				claimWorkers(t, pool, 8, 10, func() bool {
					mu.Lock()
					defer mu.Unlock()
					return ingestErr != nil ||
						finished && queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status <> 'processed'`) == 0
				})
				done.Wait()
				if ingestErr != nil {
					t.Fatal(ingestErr)
				}
			}
			auditOrder(t, pool, "stripe", int64(len(evs)), !live)
			if live {
				t.Logf("late arrivals marked out_of_order: %d",
					queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE out_of_order`))
			}
		})
	}
}

// TestOrderingHeadsOnly: a claim hands out only the head of each sequence,
// never two events of one sequence, and unordered events alongside.
func TestOrderingHeadsOnly(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	setupOrdered(t, pool, "stripe")
	ingestOrdered(t, pool, "stripe", orderedEvents(5, 4, 3), 1, "")
	rows, err := pool.Query(context.Background(), `SELECT external_id FROM webhooks.claim('w', 100) ORDER BY external_id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := "evt_000_001 evt_001_001 evt_002_001 evt_003_001 evt_004_001 evt_u_0000 evt_u_0001 evt_u_0002"
	if strings.Join(got, " ") != want {
		t.Fatalf("claimed %v, want %s", got, want)
	}
	// Nothing else is runnable until a head is processed.
	if n := len(claim(t, pool, "w2", 100, "5 minutes")); n != 0 {
		t.Fatalf("a second claim got %d events while every head is in flight", n)
	}
}

// TestOrderingFailingHeadBlocksOnlyItsKey: a head whose handler fails is
// retried in place and holds back its own sequence only; once dead it keeps
// holding it while dead_blocks, and a replay that succeeds lets the
// sequence go on in order. With dead_blocks = false a dead head lets its
// sequence go on at once.
func TestOrderingFailingHeadBlocksOnlyItsKey(t *testing.T) {
	t.Parallel()
	for _, deadBlocks := range []bool{true, false} {
		t.Run(fmt.Sprintf("dead_blocks=%v", deadBlocks), func(t *testing.T) {
			t.Parallel()
			pool := NewPool(t, 4)
			execSQL(t, pool, orderedHandlerSQL)
			execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.data.object.customer', '$.seq', $1)`, deadBlocks)
			for _, e := range []orderedEvent{{"a", 2, "a2"}, {"a", 3, "a3"}, {"b", 1, "b1"}, {"a", 1, "a1"}, {"b", 2, "b2"}} {
				ingest(t, pool, "stripe", e.id, "customer.updated", e.payload(""))
			}
			execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 2 WHERE external_id = 'a1'`)
			execSQL(t, pool, `INSERT INTO app.failing VALUES ('a1')`)

			runnable := func() string {
				rows, err := pool.Query(context.Background(), `SELECT external_id FROM webhooks.events
					WHERE status = 'pending' AND NOT order_held ORDER BY external_id`)
				if err != nil {
					t.Fatal(err)
				}
				ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				return strings.Join(ids, " ")
			}
			// runOnce claims everything runnable now and runs it through
			// process_batch (failures recorded with fail()).
			runOnce := func() {
				t.Helper()
				execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() WHERE status = 'pending'`)
				got := claim(t, pool, "w", 100, "5 minutes")
				for _, c := range got {
					execSQL(t, pool, `SELECT * FROM webhooks.process_batch('app.ordered(webhooks.events)'::regprocedure, 'w', ARRAY[$1::bigint], ARRAY[$2::int])`, c.ID, c.Attempts)
				}
			}
			if got := runnable(); got != "a1 b1" {
				t.Fatalf("runnable %q, want the heads a1 b1", got)
			}
			runOnce() // a1 fails (pending again); b1 runs, and b2 behind it in the same batch
			if got := runnable(); got != "a1" {
				t.Fatalf("after a1 failed once: runnable %q, want a1", got)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id IN ('b1', 'b2') AND status = 'processed'`); n != 2 {
				t.Fatalf("%d of b1, b2 processed, want both (b's run behind b1)", n)
			}
			runOnce() // a1 dead
			if s := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'a1' AND status = 'dead'`); s != 1 {
				t.Fatal("a1 is not dead after two failed attempts")
			}
			if deadBlocks {
				if got := runnable(); got != "" {
					t.Fatalf("dead head with dead_blocks: runnable %q, want nothing", got)
				}
				execSQL(t, pool, `DELETE FROM app.failing`)
				execSQL(t, pool, `SELECT webhooks.replay(id, 'fixed') FROM webhooks.events WHERE external_id = 'a1'`)
				if got := runnable(); got != "a1" {
					t.Fatalf("after the replay: runnable %q, want a1", got)
				}
				runOnce() // a1, and a2 behind it (a batch of one runs at most one more)
			}
			want := "a2" // dead_blocks = false: the sequence goes on past the dead a1
			if deadBlocks {
				want = "a3"
			}
			if got := runnable(); got != want {
				t.Fatalf("runnable %q, want %q", got, want)
			}
			runOnce()
			runOnce()
			wantProcessed := int64(4)
			if deadBlocks {
				wantProcessed = 5
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`); n != wantProcessed {
				t.Fatalf("%d processed, want %d", n, wantProcessed)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM app.runs WHERE cardinality(early_open) > 0`); n != 0 && deadBlocks {
				t.Errorf("%d runs with an earlier event unfinished", n)
			}
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE out_of_order`); n != 0 {
				t.Errorf("%d events marked out of order", n)
			}
		})
	}
}

// TestOrderingLateArrivalMarked: an event that arrives after a later event
// of its sequence was processed runs (it is the head now), once, and is
// marked out_of_order; the events around it are not.
func TestOrderingLateArrivalMarked(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	setupOrdered(t, pool, "stripe")
	ingest(t, pool, "stripe", "c2", "t", orderedEvent{"c", 2, "c2"}.payload(""))
	processAll(t, pool, "w")
	ingest(t, pool, "stripe", "c3", "t", orderedEvent{"c", 3, "c3"}.payload(""))
	ingest(t, pool, "stripe", "c1", "t", orderedEvent{"c", 1, "c1"}.payload(""))
	got := claim(t, pool, "w", 10, "5 minutes")
	if len(got) != 1 || queryInt(t, pool, `SELECT id FROM webhooks.events WHERE external_id = 'c1'`) != got[0].ID {
		t.Fatalf("claimed %v, want c1 alone (the head now)", got)
	}
	execSQL(t, pool, `SELECT webhooks.complete($1, 'w', $2)`, got[0].ID, got[0].Attempts)
	processAll(t, pool, "w")
	rows, err := pool.Query(context.Background(), `SELECT external_id || '=' || out_of_order FROM webhooks.events ORDER BY external_id`)
	if err != nil {
		t.Fatal(err)
	}
	marks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(marks, " ") != "c1=true c2=false c3=false" {
		t.Fatalf("out_of_order: %v, want c1 only", marks)
	}
}

// TestOrderingLateArrivalWaitsForInFlight: an earlier event that arrives
// while a later one of its sequence is being processed waits for it (one
// event of a sequence in flight at a time), then runs, marked out_of_order.
func TestOrderingLateArrivalWaitsForInFlight(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	setupOrdered(t, pool, "stripe")
	ingest(t, pool, "stripe", "c5", "t", orderedEvent{"c", 5, "c5"}.payload(""))
	inFlight := claim(t, pool, "w", 10, "5 minutes")
	ingest(t, pool, "stripe", "c4", "t", orderedEvent{"c", 4, "c4"}.payload(""))
	if n := len(claim(t, pool, "w2", 10, "5 minutes")); n != 0 {
		t.Fatalf("claimed %d events while c5 of the same sequence is in flight", n)
	}
	execSQL(t, pool, `SELECT webhooks.complete($1, 'w', $2)`, inFlight[0].ID, inFlight[0].Attempts)
	if processAll(t, pool, "w") != 1 {
		t.Fatal("c4 did not run after c5 finished")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'c4' AND out_of_order`); n != 1 {
		t.Fatal("c4 is not marked out_of_order")
	}
}

// TestOrderingBadPaths: a path that does not parse, or a blank one, raises
// 22023 with a message naming it and changes nothing; set_ordering and
// clear_ordering are idempotent.
func TestOrderingBadPaths(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	execSQL(t, pool, `SELECT webhooks.set_ordering('p', '$.customer', '$.created', false)`)
	before := queryInt(t, pool, `SELECT (extract(epoch FROM updated_at) * 1e6)::bigint FROM webhooks.ordering WHERE provider = 'p'`)
	execSQL(t, pool, `SELECT webhooks.set_ordering('p', '$.customer', '$.created', false)`)
	cases := []struct {
		sql, substr string
	}{
		{`SELECT webhooks.set_ordering('p', '$.[bad')`, `key_path '$.[bad' is not a valid SQL/JSON path`},
		{`SELECT webhooks.set_ordering('p', 'customer id')`, `key_path 'customer id' is not a valid SQL/JSON path`},
		{`SELECT webhooks.set_ordering('p', '$.customer', '$.created +')`, `order_path '$.created +' is not a valid SQL/JSON path`},
		{`SELECT webhooks.set_ordering('p', ' ')`, `key_path must be an SQL/JSON path`},
		{`SELECT webhooks.set_ordering('p', NULL)`, `key_path must be an SQL/JSON path`},
		{`SELECT webhooks.set_ordering('p', '$.customer', '')`, `order_path must be NULL or an SQL/JSON path`},
		{`SELECT webhooks.set_ordering('q', '$.[bad')`, `is not a valid SQL/JSON path`},
	}
	for _, c := range cases {
		_, err := pool.Exec(ctx, c.sql)
		wantPgError(t, err, "22023", c.substr)
	}
	var key, order string
	var deadBlocks bool
	if err := pool.QueryRow(ctx, `SELECT key_path, order_path, dead_blocks FROM webhooks.ordering WHERE provider = 'p'`).Scan(&key, &order, &deadBlocks); err != nil {
		t.Fatal(err)
	}
	if key != "$.customer" || order != "$.created" || deadBlocks {
		t.Fatalf("settings changed by refused calls: %s %s %v", key, order, deadBlocks)
	}
	if after := queryInt(t, pool, `SELECT (extract(epoch FROM updated_at) * 1e6)::bigint FROM webhooks.ordering WHERE provider = 'p'`); after != before {
		t.Error("a repeated set_ordering with the same settings rewrote the row")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.ordering WHERE provider = 'q'`); n != 0 {
		t.Error("a refused set_ordering stored a row")
	}
	execSQL(t, pool, `SELECT webhooks.clear_ordering('p')`)
	execSQL(t, pool, `SELECT webhooks.clear_ordering('p')`)
	execSQL(t, pool, `SELECT webhooks.clear_ordering('never-ordered')`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.ordering`); n != 0 {
		t.Errorf("%d ordering rows left after clear_ordering", n)
	}
}

// TestOrderingUnusableValuesAreUnordered: a key or order value that is an
// object, an array, null, missing or over 255 bytes leaves the event
// unordered (and runnable); none of them is an ingest error. Strings,
// numbers and booleans are used as they are.
func TestOrderingUnusableValuesAreUnordered(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	execSQL(t, pool, `SELECT webhooks.set_ordering('p', '$.k', '$.o')`)
	long := strings.Repeat("x", 256)
	cases := []struct {
		payload, key, num, text string
	}{
		{`{"k": "cus_1", "o": 5}`, "cus_1", "5", ""},
		{`{"k": 42, "o": "2024-01-01T00:00:00Z"}`, "42", "", "2024-01-01T00:00:00Z"},
		{`{"k": true, "o": 1.5e3}`, "true", "1500", ""},
		{`{"k": "cus_1", "o": false}`, "cus_1", "", "false"},
		{`{"k": {"id": 1}, "o": 1}`, "", "", ""},
		{`{"k": [1], "o": 1}`, "", "", ""},
		{`{"k": null, "o": 1}`, "", "", ""},
		{`{"o": 1}`, "", "", ""},
		{`{"k": "cus_2"}`, "", "", ""},
		{`{"k": "cus_2", "o": {"t": 1}}`, "", "", ""},
		{`{"k": "cus_2", "o": [1, 2]}`, "", "", ""},
		{`{"k": "` + long + `", "o": 1}`, "", "", ""},
		{`{"k": "cus_2", "o": "` + long + `"}`, "", "", ""},
	}
	for i, c := range cases {
		id, outcome := ingest(t, pool, "p", fmt.Sprintf("e%d", i), "t", c.payload)
		if outcome != "created" {
			t.Fatalf("%s: outcome %s", c.payload, outcome)
		}
		var key, num, text string
		var held bool
		if err := pool.QueryRow(ctx, `SELECT coalesce(order_key, ''), coalesce(order_num::text, ''), coalesce(order_text, ''), order_held
			FROM webhooks.events WHERE id = $1`, id).Scan(&key, &num, &text, &held); err != nil {
			t.Fatal(err)
		}
		if key != c.key || (num != c.num && !(c.num != "" && strings.HasPrefix(num, c.num))) || text != c.text {
			t.Errorf("%.60s: key %q num %q text %q, want %q %q %q", c.payload, key, num, text, c.key, c.num, c.text)
		}
		if key == "" && held {
			t.Errorf("%.60s: unordered event held", c.payload)
		}
	}
	// A strict path whose member is missing is silent too.
	execSQL(t, pool, `SELECT webhooks.set_ordering('s', 'strict $.k.id')`)
	if _, outcome := ingest(t, pool, "s", "x", "t", `{"k": "flat"}`); outcome != "created" {
		t.Fatalf("strict path on a missing member: %s", outcome)
	}
}

// TestOrderingSetOrderingAppliesToPending: turning ordering on, changing a
// path and clearing it apply to events not yet claimed, never to processed
// ones, and leave the sequences settled.
func TestOrderingSetOrderingAppliesToPending(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	execSQL(t, pool, orderedHandlerSQL)
	done := orderedEvent{"a", 9, "done"}
	ingest(t, pool, "stripe", done.id, "t", done.payload(""))
	processAll(t, pool, "w")
	for _, e := range []orderedEvent{{"a", 3, "a3"}, {"a", 1, "a1"}, {"b", 2, "b2"}, {"b", 1, "b1"}} {
		ingest(t, pool, "stripe", e.id, "t", e.payload(""))
	}
	heldCount := func() int64 {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE order_held`)
	}
	if heldCount() != 0 {
		t.Fatal("events held before ordering was on")
	}
	execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.data.object.customer', '$.seq')`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'done' AND order_key IS NULL`); n != 1 {
		t.Error("set_ordering rewrote a processed event")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE order_held AND external_id IN ('a3', 'b2')`); n != 2 || heldCount() != 2 {
		t.Fatalf("after set_ordering: held %d, want a3 and b2", heldCount())
	}
	// One key for everything: one sequence by seq.
	execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.id.type()', '$.seq')`)
	if heldCount() != 3 || queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE NOT order_held AND status = 'pending'`) != 1 {
		t.Fatalf("after changing key_path: %d held, want 3 (one sequence of four)", heldCount())
	}
	execSQL(t, pool, `SELECT webhooks.clear_ordering('stripe')`)
	if heldCount() != 0 || queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE order_key IS NOT NULL AND status = 'pending'`) != 0 {
		t.Fatal("clear_ordering left pending events ordered")
	}
}

// TestOrderingPlansUseIndexes: with 200 customers x 25 pending events (the
// bench's shape), a claim reads the claim index, which holds only the 200
// runnable heads, never the 4,800 held events behind them (no row of it
// removed by a filter); and the head-of-sequence look-ups a completion
// makes (the settle and the out-of-order probe, run by the triggers) read
// events_order_idx, never a sequential scan of webhooks.events. The plans
// are those auto_explain logs for the functions' own statements.
func TestOrderingPlansUseIndexes(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.data.object.customer', '$.seq')`)
	// Stored as ingest would store them (TestOrderingClaimConcurrentWorkers
	// goes through ingest), in one statement: held behind each head.
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, order_key, order_num, order_held)
		SELECT 'stripe', 'evt_' || k || '_' || n, 't',
		       jsonb_build_object('seq', n, 'data', jsonb_build_object('object', jsonb_build_object('customer', 'cus_' || k))),
		       'cus_' || k, n, n > 1
		FROM generate_series(25, 1, -1) AS n, generate_series(1, 200) AS k`)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at)
		SELECT 'other', 'o' || i, 't', '{}', 'processed', now() FROM generate_series(1, 20000) AS i`)
	execSQL(t, pool, `ANALYZE webhooks.inbox, webhooks.keys`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'pending' AND NOT order_held`); n != 200 {
		t.Fatalf("%d runnable events, want the 200 heads", n)
	}

	c, notes := noticeConnURL(t, SuperuserURL(t, conf.Database), `LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_analyze = on`, `SET auto_explain.log_nested_statements = on`, `SET client_min_messages = log`)
	var id int64
	var attempt int32
	if err := c.QueryRow(ctx, `SELECT max(id), max(attempts) FROM webhooks.claim('w', 50)`).Scan(&id, &attempt); err != nil {
		t.Fatal(err)
	}
	var pick string
	for _, plan := range notes() {
		if strings.Contains(plan, "FOR UPDATE SKIP LOCKED") && strings.Contains(plan, "picked") {
			pick = plan
		}
	}
	if pick == "" {
		t.Fatalf("auto_explain logged no plan of claim's pick:\n%s", strings.Join(notes(), "\n"))
	}
	if !strings.Contains(pick, "Index Scan using events_claimable_idx") || strings.Contains(pick, "Rows Removed by Filter") {
		t.Errorf("claim's pick does not read only runnable events from events_claimable_idx:\n%s", pick)
	}

	seen := len(notes())
	var ok bool
	if err := c.QueryRow(ctx, `SELECT webhooks.complete($1, 'w', $2)`, id, attempt).Scan(&ok); err != nil || !ok {
		t.Fatalf("complete: %v %v", ok, err)
	}
	got := notes()[seen:]
	var settle []string
	for _, plan := range got {
		if strings.Contains(plan, "order_key") && (strings.Contains(plan, "FROM webhooks.inbox") || strings.Contains(plan, "UPDATE webhooks.inbox")) {
			settle = append(settle, plan)
		}
	}
	if len(settle) < 3 {
		t.Fatalf("auto_explain logged %d plans of the ordering look-ups:\n%s", len(settle), strings.Join(got, "\n"))
	}
	for _, plan := range settle {
		if strings.Contains(plan, "Seq Scan on inbox") || !strings.Contains(plan, "events_order_idx") &&
			!strings.Contains(plan, "events_pkey") {
			t.Errorf("an ordering look-up reads neither events_order_idx nor the primary key:\n%s", plan)
		}
	}
	joined := strings.Join(settle, "\n")
	if !strings.Contains(joined, "events_order_idx") {
		t.Errorf("no ordering look-up used events_order_idx:\n%s", joined)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'pending' AND NOT order_held`); n != 151 {
		t.Errorf("%d runnable after one completion, want 150 heads + the next of the completed sequence", n)
	}
}
