package tests

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// storageV2Marker is a statement of the migration that starts storage v2:
// migrateToBefore stops at the version before it, the last layout where
// webhooks.events is a table (found by content, so renumbering changes
// nothing).
const storageV2Marker = "CREATE TABLE webhooks.keys ("

// ingestCall is one ingest_webhook() call with the arguments a redelivery
// sends again: the same payload and the same body digest.
const ingestCall = `SELECT outcome FROM webhooks.ingest_webhook($1, $2, 'thing.happened', $3::jsonb, 'webhook', false, $4::bytea)`

// legacyKey is an event stored before the upgrade.
type legacyKey struct {
	ID         int64
	Provider   string
	ExternalID string
	Payload    string
	Digest     []byte
	Status     string
	Attempts   int32
}

// legacyDB is a database at the last version before storage v2, holding
// events in every state.
type legacyDB struct {
	db   *sql.DB
	pool *pgxpool.Pool
	keys []legacyKey
}

// digestOf is the body digest the fixtures store for a key.
func digestOf(provider, key string) []byte {
	d := sha256.Sum256([]byte(provider + ":" + key))
	return d[:]
}

// buildLegacy migrates db (whose schema webhooks exists) to the last version
// before storage v2 and stores, through that version's SQL API: events dead
// through fail() at max_attempts, pending after one failed attempt, processed
// through claim() and complete(), processing under an hour's lease, pending,
// some of each with a body digest, and the ordered provider "shop" (5
// customers x 6 events, app.ordered(webhooks.events) ran the first few
// through process_pending()); then bulk processed events of the last 4
// days, inserted straight into the table.
func buildLegacy(t *testing.T, db *sql.DB, url string, bulk int) *legacyDB {
	t.Helper()
	ctx := context.Background()
	migrateToBefore(t, db, storageV2Marker)
	pool := PoolFor(t, url, 12)
	l := &legacyDB{db: db, pool: pool}
	setupOrdered(t, pool, "shop")

	store := func(prefix string, n, digestEvery int) {
		t.Helper()
		for i := 1; i <= n; i++ {
			key := fmt.Sprintf("%s_%02d", prefix, i)
			var digest []byte
			if digestEvery > 0 && i%digestEvery == 0 {
				digest = digestOf("legacy", key)
			}
			var outcome string
			if err := pool.QueryRow(ctx, ingestCall, "legacy", key, fmt.Sprintf(`{"k": %q}`, key), digest).Scan(&outcome); err != nil || outcome != "created" {
				t.Fatalf("store %s: %s, %v", key, outcome, err)
			}
		}
	}
	fail := func(c claimed, want string) {
		t.Helper()
		var got string
		if err := pool.QueryRow(ctx, `SELECT webhooks.fail($1, 'old', $2, 'boom')`, c.ID, c.Attempts).Scan(&got); err != nil || got != want {
			t.Fatalf("fail(%d): %q, %v; want %q", c.ID, got, err, want)
		}
	}

	// Dead: two failed attempts of two.
	store("dead", 4, 2)
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 2 WHERE external_id LIKE 'dead\_%'`)
	for round, want := range []string{"pending", "dead"} {
		batch := claim(t, pool, "old", 50, "1 hour")
		if len(batch) != 4 {
			t.Fatalf("round %d claimed %d dead-to-be events, want 4", round+1, len(batch))
		}
		for _, c := range batch {
			fail(c, want)
		}
		execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() WHERE status = 'pending'`)
	}
	// Pending after a failed attempt, its retry a day away.
	store("retry", 3, 3)
	for _, c := range claim(t, pool, "old", 50, "1 hour") {
		fail(c, "pending")
	}
	execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() + interval '1 day' WHERE external_id LIKE 'retry\_%'`)
	// Processed through claim() and complete().
	store("done", 40, 2)
	batch := claim(t, pool, "old", 100, "1 hour")
	if len(batch) != 40 {
		t.Fatalf("claimed %d events to complete, want 40", len(batch))
	}
	for _, c := range batch {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT webhooks.complete($1, 'old', $2)`, c.ID, c.Attempts).Scan(&ok); err != nil || !ok {
			t.Fatalf("complete(%d): %v, %v", c.ID, ok, err)
		}
	}
	// Processing: claimed under an hour's lease.
	store("busy", 4, 2)
	if batch := claim(t, pool, "old", 50, "1 hour"); len(batch) != 4 {
		t.Fatalf("claimed %d events to leave processing, want 4", len(batch))
	}
	// Ordered: the first events of some sequences run by the old handler.
	ingestOrdered(t, pool, "shop", orderedEvents(5, 6, 0), 2, "")
	if ran := processPending(t, pool, orderedHandler, "old", 4); len(ran) == 0 {
		t.Fatal("process_pending ran no ordered event before the upgrade")
	}
	// Pending.
	store("pend", 30, 3)
	// Bulk processed events of the last 4 days, one in 10 with a digest.
	execSQL(t, pool, `
		INSERT INTO webhooks.events (provider, external_id, event_type, payload, source, status, received_at,
		                             updated_at, claimed_at, processed_at, attempts, body_sha256)
		SELECT 'bulk', 'b' || g, 'thing.happened', jsonb_build_object('k', 'b' || g), 'webhook', 'processed',
		       x.at, x.at, x.at, x.at, 1, CASE WHEN g % 10 = 0 THEN sha256(convert_to('bulk:b' || g, 'UTF8')) END
		FROM generate_series(1, $1::int) AS g,
		LATERAL (SELECT now() - (g % 4) * interval '1 day' - (g % 3600) * interval '1 second' AS at) AS x`, bulk)

	rows, err := pool.Query(ctx, `SELECT id, provider, external_id, payload::text, body_sha256, status, attempts
		FROM webhooks.events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	l.keys, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (legacyKey, error) {
		var k legacyKey
		err := r.Scan(&k.ID, &k.Provider, &k.ExternalID, &k.Payload, &k.Digest, &k.Status, &k.Attempts)
		return k, err
	})
	if err != nil {
		t.Fatal(err)
	}
	byStatus := map[string]int{}
	for _, k := range l.keys {
		byStatus[k.Status]++
	}
	for _, s := range []string{"pending", "processing", "processed", "dead"} {
		if byStatus[s] == 0 {
			t.Fatalf("no %s event before the upgrade: %v", s, byStatus)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE body_sha256 IS NOT NULL AND status <> 'processed'`); n == 0 {
		t.Fatal("no unfinished event with a digest before the upgrade")
	}
	t.Logf("before the upgrade: %d events %v", len(l.keys), byStatus)
	return l
}

// redeliverAll sends every key stored before the upgrade again, in one
// statement, and returns the outcomes that were not 'duplicate'.
func (l *legacyDB) redeliverAll(t *testing.T) []string {
	t.Helper()
	providers, ids, payloads, digests := l.columns()
	rows, err := l.pool.Query(context.Background(), `
		SELECT k.p || '/' || k.x || ': ' || i.outcome
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[]) AS k(p, x, pl, d),
		LATERAL webhooks.ingest_webhook(k.p, k.x, 'thing.happened', k.pl::jsonb, 'webhook', false, k.d) AS i
		WHERE i.outcome <> 'duplicate'`, providers, ids, payloads, digests)
	if err != nil {
		t.Fatalf("redeliver every old key: %v", err)
	}
	wrong, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("redeliver every old key: %v", err)
	}
	return wrong
}

// columns returns the old keys' providers, external ids, payloads and digests.
func (l *legacyDB) columns() (providers, ids, payloads []string, digests [][]byte) {
	for _, k := range l.keys {
		providers = append(providers, k.Provider)
		ids = append(ids, k.ExternalID)
		payloads = append(payloads, k.Payload)
		digests = append(digests, k.Digest)
	}
	return providers, ids, payloads, digests
}

// liveIngest is ingest_webhook() called from several goroutines, with old
// keys (each must answer 'duplicate'), new keys of provider "live" and new
// keys sent again, recording every outcome, error and how long each call took.
type liveIngest struct {
	pool  *pgxpool.Pool
	old   []legacyKey
	phase atomic.Pointer[string]
	// tolerant, while set, counts errors apart (the server is being killed).
	tolerant atomic.Bool
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	mu        sync.Mutex
	calls     int
	slowest   time.Duration
	slowWhat  string
	errs      []string
	tolerated int
	inFlight  []string // calls under way at the rename (see send)
	senders   int
	wrong     []string       // a known key answered other than 'duplicate'
	created   map[string]int // new key -> times answered 'created'
	byPhase   map[string]int
}

// startLiveIngest starts senders goroutines in phase "before".
func startLiveIngest(pool *pgxpool.Pool, old []legacyKey, senders int) *liveIngest {
	li := &liveIngest{pool: pool, old: old, stop: make(chan struct{}), created: map[string]int{}, byPhase: map[string]int{}, senders: senders}
	li.setPhase("before")
	for g := range senders {
		li.wg.Add(1)
		go li.send(g)
	}
	return li
}

func (li *liveIngest) setPhase(p string) { li.phase.Store(&p) }

// Stop stops the senders and waits for them; calling it again does nothing.
func (li *liveIngest) Stop() {
	li.stopOnce.Do(func() { close(li.stop) })
	li.wg.Wait()
}

func (li *liveIngest) send(g int) {
	defer li.wg.Done()
	rng := rand.New(rand.NewPCG(uint64(g), 36))
	var mine []string
	for i := 0; ; i++ {
		select {
		case <-li.stop:
			return
		default:
		}
		var provider, key, payload string
		var digest []byte
		known := true
		switch r := rng.IntN(10); {
		case r < 5:
			k := li.old[rng.IntN(len(li.old))]
			provider, key, payload, digest = k.Provider, k.ExternalID, k.Payload, k.Digest
		case r < 8 || len(mine) == 0:
			provider, key, known = "live", fmt.Sprintf("live_%d_%06d", g, i), false
		default:
			provider, key = "live", mine[rng.IntN(len(mine))]
		}
		if provider == "live" {
			payload = fmt.Sprintf(`{"k": %q}`, key)
			if strings.HasSuffix(key, "3") {
				digest = digestOf("live", key)
			}
		}
		phase := *li.phase.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		var outcome string
		err := li.pool.QueryRow(ctx, ingestCall, provider, key, payload, digest).Scan(&outcome)
		took := time.Since(start)
		cancel()
		what := fmt.Sprintf("%s %s/%s", phase, provider, key)
		li.mu.Lock()
		li.calls++
		li.byPhase[phase]++
		switch {
		case err != nil && li.tolerant.Load():
			li.tolerated++
		case err != nil && phase == "migrate" && renamedUnderCall(err):
			// A call already running the old ingest_webhook() when the
			// migration renamed the table under it (it waited for the
			// rename's lock): at most one per sender, answered with an
			// error the runner turns into a 503 for the provider to retry.
			li.inFlight = append(li.inFlight, fmt.Sprintf("%s (%v): %v", what, took.Round(time.Millisecond), err))
		case err != nil:
			li.errs = append(li.errs, fmt.Sprintf("%s (%v): %v", what, took.Round(time.Millisecond), err))
		case known && outcome != "duplicate":
			li.wrong = append(li.wrong, what+": "+outcome)
		case !known && outcome == "created":
			li.created[key]++
			mine = append(mine, key)
		case !known:
			li.wrong = append(li.wrong, what+" (new): "+outcome)
		}
		if err == nil && took > li.slowest {
			li.slowest, li.slowWhat = took, what
		}
		li.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
}

// check fails t for an error, a known key not answered 'duplicate', a new
// key answered 'created' twice, or a call slower than maxWait.
func (li *liveIngest) check(t *testing.T, maxWait time.Duration) {
	t.Helper()
	li.mu.Lock()
	defer li.mu.Unlock()
	t.Logf("live ingest: %d calls %v, %d new keys created, slowest %v (%s), %d errors tolerated",
		li.calls, li.byPhase, len(li.created), li.slowest.Round(time.Millisecond), li.slowWhat, li.tolerated)
	for _, p := range []string{"before", "migrate", "move"} {
		if li.byPhase[p] == 0 {
			t.Errorf("no ingest call during %q", p)
		}
	}
	if len(li.inFlight) > li.senders {
		t.Errorf("%d calls failed on the rename, more than the %d that can be under way at once: %s",
			len(li.inFlight), li.senders, strings.Join(li.inFlight[:min(5, len(li.inFlight))], "; "))
	} else if len(li.inFlight) > 0 {
		t.Logf("%d calls under way at the rename failed (nothing stored; the provider retries): %s",
			len(li.inFlight), strings.Join(li.inFlight, "; "))
	}
	if len(li.errs) > 0 {
		kinds := map[string]int{}
		for _, e := range li.errs {
			kinds[e[strings.Index(e, ": ")+2:]]++
		}
		t.Errorf("%d ingest calls failed, first: %s; by error: %v", len(li.errs), strings.Join(li.errs[:min(5, len(li.errs))], "; "), kinds)
	}
	if len(li.wrong) > 0 {
		t.Errorf("%d known keys not answered 'duplicate', first: %s", len(li.wrong), strings.Join(li.wrong[:min(5, len(li.wrong))], "; "))
	}
	for k, n := range li.created {
		if n > 1 {
			t.Errorf("new key %s answered 'created' %d times", k, n)
		}
	}
	if maxWait > 0 && li.slowest > maxWait {
		t.Errorf("an ingest call waited %v (%s), more than %v", li.slowest, li.slowWhat, maxWait)
	}
}

// createdKeys returns the new keys answered 'created'.
func (li *liveIngest) createdKeys() []string {
	li.mu.Lock()
	defer li.mu.Unlock()
	out := make([]string, 0, len(li.created))
	for k := range li.created {
		out = append(out, k)
	}
	return out
}

// moveStep is one webhooks.move_history() call's answer.
type moveStep struct {
	KeysCopied  int64 `json:"keys_copied"`
	Moved       int64 `json:"moved"`
	Deleted     int64 `json:"deleted"`
	KeysPending bool  `json:"keys_pending"`
	More        bool  `json:"more"`
}

// moveHistory calls webhooks.move_history(batch) until it answers
// keys_pending false and more false, and returns how many calls it took.
// retry, when set, waits out errors (a killed server) until deadline or
// until ctx is done.
func moveHistory(ctx context.Context, pool *pgxpool.Pool, batch int, retry bool, deadline time.Time) (calls, failed int, err error) {
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var s moveStep
		err := pool.QueryRow(ctx, `SELECT webhooks.move_history($1)`, batch).Scan(&s)
		calls++
		if err != nil {
			if !retry {
				return calls, failed, fmt.Errorf("move_history(%d), call %d: %w", batch, calls, err)
			}
			failed++
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if !s.KeysPending && !s.More {
			return calls, failed, nil
		}
	}
	return calls, failed, fmt.Errorf("move_history(%d) not done after %d calls", batch, calls)
}

// checkUpgraded fails t unless, after the upgrade and the move: every key
// is once in webhooks.keys and its event once in webhooks.events, every old
// key (with its digest) and every key ingest answered 'created' among them;
// the old unfinished events kept their status and attempts in the queue, the
// old processed ones are in webhooks.history only; the queue's legacy unique
// key is gone and webhooks.storage_state says keys_pending false.
func checkUpgraded(t *testing.T, l *legacyDB, created []string) {
	t.Helper()
	pool := l.pool
	events := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`)
	if keys := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys`); keys != events {
		t.Errorf("%d keys for %d events", keys, events)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM (SELECT FROM webhooks.events GROUP BY provider, external_id HAVING count(*) > 1) AS d`); n != 0 {
		t.Errorf("%d keys with more than one event", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys AS k JOIN webhooks.events AS e
		ON e.id = k.event_id AND e.provider = k.provider AND e.external_id = k.external_id`); n != events {
		t.Errorf("%d keys name their event, want %d", n, events)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.inbox AS i JOIN webhooks.history AS h ON h.id = i.id`); n != 0 {
		t.Errorf("%d events both in the queue and in history", n)
	}
	providers, ids, _, digests := l.columns()
	var evIDs []int64
	var statuses []string
	var attempts []int32
	var processed []int64
	for _, k := range l.keys {
		evIDs = append(evIDs, k.ID)
		statuses = append(statuses, k.Status)
		attempts = append(attempts, k.Attempts)
		if k.Status == "processed" {
			processed = append(processed, k.ID)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[]) AS o(id, p, x, d)
		JOIN webhooks.keys AS k ON k.provider = o.p AND k.external_id = o.x AND k.event_id = o.id
		 AND k.body_sha256 IS NOT DISTINCT FROM o.d`, evIDs, providers, ids, digests); n != int64(len(l.keys)) {
		t.Errorf("%d of the %d old keys in webhooks.keys with their event and digest", n, len(l.keys))
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM unnest($1::text[]) AS x JOIN webhooks.keys AS k
		ON k.provider = 'live' AND k.external_id = x`, created); n != int64(len(created)) {
		t.Errorf("%d of the %d keys answered 'created' are stored", n, len(created))
	}
	unfinished := int64(len(l.keys) - len(processed))
	for _, rel := range []string{"webhooks.inbox", "webhooks.events"} {
		if n := queryInt(t, pool, `SELECT count(*) FROM unnest($1::bigint[], $2::text[], $3::int[]) AS o(id, s, a)
			JOIN `+rel+` AS e ON e.id = o.id AND e.status = o.s AND e.attempts = o.a
			WHERE o.s <> 'processed'`, evIDs, statuses, attempts); n != unfinished {
			t.Errorf("%d of the %d old unfinished events in %s with their status and attempts", n, unfinished, rel)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.history WHERE id = ANY ($1)`, processed); n != int64(len(processed)) {
		t.Errorf("%d of the %d old processed events in webhooks.history", n, len(processed))
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.inbox WHERE status = 'processed'`); n != 0 {
		t.Errorf("%d processed events left in the queue", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM pg_constraint
		WHERE conrelid = 'webhooks.inbox'::regclass AND conname = 'events_provider_external_id_key'`); n != 0 {
		t.Error("the queue still has its legacy unique key events_provider_external_id_key")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.storage_state WHERE NOT keys_pending`); n != 1 {
		t.Error("webhooks.storage_state does not say keys_pending false")
	}
	if wrong := l.redeliverAll(t); len(wrong) > 0 {
		t.Errorf("%d old keys not answered 'duplicate' after the move, first: %s", len(wrong), strings.Join(wrong[:min(5, len(wrong))], "; "))
	}
}

// checkOrderingKept fails t unless "shop" is still an ordered provider
// (webhooks.ordering, _ordered_providers()) and the old handler, run by
// process_pending() under its signature after the rename, runs every
// sequence to its end in order.
func checkOrderingKept(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.ordering WHERE provider = 'shop'`); n != 1 {
		t.Errorf("webhooks.ordering has %d rows for shop, want 1", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM unnest(webhooks._ordered_providers()) AS p WHERE p = 'shop'`); n != 1 {
		t.Error("_ordered_providers() no longer lists shop")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'shop' AND order_key IS NULL`); n != 0 {
		t.Errorf("%d events of shop lost their order key", n)
	}
	for i := 0; queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'shop' AND status <> 'processed'`) > 0; i++ {
		if i == 100 || len(processPending(t, pool, "app.ordered(webhooks.inbox)", "new", 200)) == 0 {
			t.Fatal("process_pending() leaves events of shop unprocessed")
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.runs AS r JOIN webhooks.events AS e ON e.id = r.event_id
		WHERE e.provider = 'shop'`); n != 30 {
		t.Errorf("%d runs of shop's 30 events", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.runs AS a JOIN app.runs AS b
		ON a.k = b.k AND a.n < b.n AND a.num > b.num`); n != 0 {
		t.Errorf("%d pairs of one sequence ran out of order", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.runs WHERE k IS NOT NULL AND cardinality(early_open) > 0`); n != 0 {
		t.Errorf("%d ordered runs started while an earlier event of their sequence was open", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'shop' AND out_of_order`); n != 0 {
		t.Errorf("%d events of shop marked out of order", n)
	}
}

// renamedUnderCall reports whether err is what a call running the old
// ingest_webhook() meets when the table it was about to write becomes a
// view under it: its ON CONFLICT names a constraint the view does not have
// (42704), or the relation it planned for is gone (42P01).
func renamedUnderCall(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42704" || pgErr.Code == "42P01")
}
