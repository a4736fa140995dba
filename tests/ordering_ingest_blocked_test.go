package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// blockedDelivery is one delivery sent while a sequence's lock was held.
type blockedDelivery struct {
	provider, key string
	blocked       bool // of the sequence whose lock is held
	status        int
	took          time.Duration
}

// sendSigned posts body to provider (a stripe or github kind) signed with
// its first test secret, and records the answer and how long it took.
func sendSigned(client *http.Client, base string, d *blockedDelivery, body string) {
	kind := d.provider
	h := signers[kind](secretsFor[kind][0], body, d.key, time.Now())
	h.Set("Content-Type", "application/json")
	req, err := http.NewRequest(http.MethodPost, base+"/webhooks/"+d.provider, strings.NewReader(body))
	if err != nil {
		return
	}
	req.Header = h
	start := time.Now()
	resp, err := client.Do(req)
	d.took = time.Since(start)
	if err != nil {
		return // status 0: a transport error or the client's timeout
	}
	resp.Body.Close()
	d.status = resp.StatusCode
}

// stripeOrderedBody is a Stripe event of customer cus with order value seq.
func stripeOrderedBody(id, cus string, seq int) string {
	return fmt.Sprintf(`{"id": %q, "type": "invoice.paid", "object": "event", "data": {"object": {"customer": %q}}, "seq": %d}`,
		id, cus, seq)
}

// TestOrderingIngestBlockedSequence: `pginbox serve` with its default
// ingest batching (64 per batch, 4 flushers) and workers running while one
// transaction holds the lock of one ordered sequence for 16 s (a
// complete() of that sequence's head, left open). Deliveries of that
// sequence sent first (12 at once, more than the flushers), then 80 of other
// customers of the same ordered provider and of an unordered GitHub
// provider: every one is answered 200 within 2 s, and every 200 has its row.
// Before ingest stopped waiting on a sequence's lock, the blocked
// deliveries held all four flushers and everything else was answered only
// after the 10 s ingest timeout, 503. Once the holder commits, the blocked
// sequence's events run, exactly once each, in order.
func TestOrderingIngestBlockedSequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 8)
	setupOrdered(t, pool, "stripe")

	// The sequence's head: stored and claimed before the runner starts, then
	// run and completed in a transaction held open (its settle holds the
	// sequence's lock until commit).
	headID, _ := ingest(t, pool, "stripe", "evt_blocked_0", "invoice.paid", stripeOrderedBody("evt_blocked_0", "cus_blocked", 0))
	head := claim(t, pool, "holder", 1, "10 minutes")
	if len(head) != 1 || head[0].ID != headID {
		t.Fatalf("claimed %v, want event %d", head, headID)
	}
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck
	var completed bool
	if _, err := holder.Exec(ctx, `SELECT app.ordered(e) FROM webhooks.events AS e WHERE e.id = $1`, headID); err != nil {
		t.Fatal(err)
	}
	if err := holder.QueryRow(ctx, `SELECT webhooks.complete($1, 'holder', $2)`, headID, head[0].Attempts).Scan(&completed); err != nil || !completed {
		t.Fatalf("complete: %v, %v", completed, err)
	}
	held := time.Now()
	// The premise: the sequence's lock is taken and not free to others.
	var free bool
	if err := pool.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('pginbox.order' || chr(31) || 'stripe' || chr(31) || 'cus_blocked', 0))`).Scan(&free); err != nil || free {
		t.Fatalf("the sequence's lock is free to others (%v, %v): the test would hold nothing", free, err)
	}

	sqlHandler, err := runner.ParseHandler("sql:app.ordered", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, conf.URL(), runner.Config{Handler: sqlHandler, Workers: 4, BatchSize: 10,
		PollInterval: 100 * time.Millisecond, ReconcileEvery: time.Second},
		map[string][2]string{"stripe": {"stripe", secretsFor["stripe"][0]}, "github": {"github", secretsFor["github"][0]}})
	client := &http.Client{Timeout: 30 * time.Second}

	var (
		mu   sync.Mutex
		sent []*blockedDelivery
		wg   sync.WaitGroup
	)
	send := func(d *blockedDelivery, body string) {
		defer wg.Done()
		sendSigned(client, srv.Base, d, body)
		mu.Lock()
		sent = append(sent, d)
		mu.Unlock()
	}
	const blocked = 12
	for i := 1; i <= blocked; i++ {
		d := &blockedDelivery{provider: "stripe", key: fmt.Sprintf("evt_blocked_%d", i), blocked: true}
		wg.Add(1)
		go send(d, stripeOrderedBody(d.key, "cus_blocked", i))
	}
	time.Sleep(300 * time.Millisecond) // the blocked ones reach the flushers first
	for s := 0; s < 4; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				d := &blockedDelivery{provider: "stripe", key: fmt.Sprintf("evt_other_%d_%d", s, i)}
				wg.Add(1)
				send(d, stripeOrderedBody(d.key, fmt.Sprintf("cus_%d_%d", s, i), 1))
				g := &blockedDelivery{provider: "github", key: fmt.Sprintf("gh-%d-%d", s, i)}
				wg.Add(1)
				send(g, sampleBody("github", g.key))
			}
		}()
	}
	wg.Wait()
	if time.Since(held) > 15*time.Second {
		t.Fatalf("the deliveries took %v: the lock was held for less than they took", time.Since(held))
	}

	var slowest, slowestBlocked time.Duration
	var acked []string
	for _, d := range sent {
		if d.status != http.StatusOK || d.took > 2*time.Second {
			t.Errorf("%s/%s (blocked sequence: %v) answered %d after %v; want 200 within 2s", d.provider, d.key, d.blocked, d.status, d.took)
		}
		if d.status == http.StatusOK && d.provider == "stripe" {
			acked = append(acked, d.key)
		}
		if d.blocked {
			slowestBlocked = max(slowestBlocked, d.took)
		} else {
			slowest = max(slowest, d.took)
		}
	}
	t.Logf("%d deliveries while the lock was held: slowest of other sequences and providers %v, of the blocked sequence %v",
		len(sent), slowest, slowestBlocked)
	if len(sent) != blocked+80 {
		t.Fatalf("%d deliveries sent, want %d", len(sent), blocked+80)
	}
	// Never a 2xx without its row.
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'stripe' AND external_id = ANY ($1)`, acked); n != int64(len(acked)) {
		t.Fatalf("%d of %d acknowledged stripe deliveries stored", n, len(acked))
	}
	// The blocked sequence's new events wait behind the head still in flight.
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE order_key = 'cus_blocked' AND status <> 'pending' AND id <> $1`, headID); n != 0 {
		t.Fatalf("%d events of the blocked sequence ran while its head was in flight", n)
	}

	time.Sleep(time.Until(held.Add(16 * time.Second)))
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	total := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`)
	if total != int64(blocked+81) {
		t.Fatalf("%d events stored, want %d", total, blocked+81)
	}
	waitFor(t, 30*time.Second, "every event processed after the lock was released", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) == total
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM app.runs`); n != total {
		t.Errorf("%d handler runs for %d events (exactly once)", n, total)
	}
	rows, err := pool.Query(ctx, `SELECT num::int FROM app.runs WHERE k = 'cus_blocked' ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		nums = append(nums, n)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(nums) != blocked+1 || !slices.IsSorted(nums) {
		t.Errorf("the blocked sequence ran in the order %v; want 0..%d in order", nums, blocked)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE out_of_order OR order_held`); n != 0 {
		t.Errorf("%d events out of order or still held", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.order_unsettled`); n != 0 {
		t.Errorf("%d sequences still listed as unsettled", n)
	}
}

// TestOrderingIngestDeferredSettle: with a sequence's lock held by an open
// complete() of its head, ingest_webhook() of that sequence (a new event, a
// redelivery whose payload moves it in the sequence, and one through the
// unsigned-key path) returns at once, well inside a 2 s statement_timeout:
// each event is stored held and its sequence listed in
// webhooks.order_unsettled. Nothing runs meanwhile. Once the holder commits
// and nothing else happens, one reconcile() pass settles the sequence:
// exactly its first event in order becomes runnable, the list is empty.
// Before, each of these calls waited for the lock and failed on the
// statement_timeout.
func TestOrderingIngestDeferredSettle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := NewPool(t, 4)
	execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.customer', '$.seq')`)
	headID, _ := ingest(t, pool, "stripe", "head", "t", `{"customer": "cus_1", "seq": 1}`)
	head := claim(t, pool, "holder", 1, "10 minutes")
	if len(head) != 1 || head[0].ID != headID {
		t.Fatalf("claimed %v, want %d", head, headID)
	}
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck
	if _, err := holder.Exec(ctx, `SELECT webhooks.complete($1, 'holder', $2)`, headID, head[0].Attempts); err != nil {
		t.Fatal(err)
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET statement_timeout = '2s'`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, payload, digest, want string }{
		{"e3", `{"customer": "cus_1", "seq": 3}`, "", "created"},
		{"e4", `{"customer": "cus_1", "seq": 4}`, "", "created"},
		{"e4", `{"customer": "cus_1", "seq": 2}`, "", "updated"}, // now sorts first
		{"e5", `{"customer": "cus_1", "seq": 5}`, strings.Repeat("5", 32), "created"},
	} {
		var digest any
		if c.digest != "" {
			digest = []byte(c.digest)
		}
		start := time.Now()
		var outcome string
		if err := conn.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_webhook('stripe', $1, 't', $2::jsonb, body_sha256 => $3)`,
			c.key, c.payload, digest).Scan(&outcome); err != nil {
			t.Fatalf("ingest %s while the sequence's lock is held: %v", c.key, err)
		}
		if outcome != c.want || time.Since(start) > time.Second {
			t.Fatalf("ingest %s: %s after %v, want %s at once", c.key, outcome, time.Since(start), c.want)
		}
	}
	conn.Release()
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE order_key = 'cus_1' AND status = 'pending' AND order_held`); n != 3 {
		t.Fatalf("%d of 3 new events stored held", n)
	}
	if n := queryInt(t, pool, `SELECT count(DISTINCT order_key) FROM webhooks.order_unsettled WHERE provider = 'stripe'`); n != 1 {
		t.Fatalf("the sequence is not listed as unsettled")
	}
	if got := claim(t, pool, "w", 10, "1 minute"); len(got) != 0 {
		t.Fatalf("claimed %d events while the sequence's head was in flight", len(got))
	}

	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	reconcile(t, pool)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.order_unsettled`); n != 0 {
		t.Fatalf("%d rows left in order_unsettled after reconcile", n)
	}
	var runnable []string
	rows, err := pool.Query(ctx, `SELECT external_id FROM webhooks.events WHERE order_key = 'cus_1' AND status = 'pending' AND NOT order_held`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		runnable = append(runnable, k)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if !slices.Equal(runnable, []string{"e4"}) {
		t.Fatalf("runnable after the settle: %v, want [e4] (seq 2, first in order)", runnable)
	}
}
