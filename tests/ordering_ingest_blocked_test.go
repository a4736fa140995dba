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
	kit := kitOf(d.provider)
	h := kit.Sign(kit.Secrets[0], body, d.key, time.Now())
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
// provider: every other one is answered 200 within 2 s and has its row;
// each of the blocked sequence is answered 503 within 2 s (its place in the
// sequence cannot be decided while the lock is held) and has no row. Before
// ingest bounded its wait for a sequence's lock, the blocked deliveries held
// all four flushers: everything else was answered after 9.8 s and the
// blocked ones 503 at the 10 s ingest timeout. Sent again once the holder
// commits (the provider's retry), the blocked deliveries are stored and the
// sequence runs in order, each event exactly once.
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
		map[string][2]string{"stripe": {"stripe", kitOf("stripe").Secrets[0]}, "github": {"github", kitOf("github").Secrets[0]}})
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
	var acked, refused []string
	for _, d := range sent {
		want := http.StatusOK
		if d.blocked {
			want = http.StatusServiceUnavailable
		}
		if d.status != want || d.took > 2*time.Second {
			t.Errorf("%s/%s (blocked sequence: %v) answered %d after %v; want %d within 2s", d.provider, d.key, d.blocked, d.status, d.took, want)
		}
		if d.status == http.StatusOK && d.provider == "stripe" {
			acked = append(acked, d.key)
		}
		if d.status != http.StatusOK {
			refused = append(refused, d.key)
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
	// Never a 2xx without its row, nor a row without a 2xx.
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'stripe' AND external_id = ANY ($1)`, acked); n != int64(len(acked)) {
		t.Fatalf("%d of %d acknowledged stripe deliveries stored", n, len(acked))
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = ANY ($1)`, refused); n != 0 {
		t.Fatalf("%d deliveries answered 503 were stored", n)
	}

	time.Sleep(time.Until(held.Add(16 * time.Second)))
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// The provider retries what was refused.
	for i := 1; i <= blocked; i++ {
		d := &blockedDelivery{provider: "stripe", key: fmt.Sprintf("evt_blocked_%d", i), blocked: true}
		sendSigned(client, srv.Base, d, stripeOrderedBody(d.key, "cus_blocked", i))
		if d.status != http.StatusOK {
			t.Fatalf("%s sent again after the lock was released: %d", d.key, d.status)
		}
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
}

// TestOrderingIngestLockedSequence: while the lock of sequence cus_1 is held
// by an open complete() of its head (which lets the next event, seq 3, run
// once it commits), every delivery of cus_1 is refused within a 2 s
// statement_timeout and stores nothing: through ingest_webhook() SQLSTATE
// 55P03 after its one-second wait, for a new event (seq 2: it would go before
// seq 3), a redelivery that would move a pending event, and one through the
// unsigned-key path; through ingest_batch() as outcome retry, while the
// neighbours of other keys and providers in the same call are created and
// the call takes 250 ms of waiting in all, not per blocked element.
// Storing seq 2 held and deciding its place later would let seq 3, made
// runnable by the holder, be handed out first. Once the holder commits,
// seq 2 sent again is stored and goes first: exactly it is runnable.
// Before, every one of these calls waited for the lock and failed on the
// statement_timeout, and the batch with them.
func TestOrderingIngestLockedSequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := NewPool(t, 4)
	execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.customer', '$.seq')`)
	headID, _ := ingest(t, pool, "stripe", "head", "t", `{"customer": "cus_1", "seq": 1}`)
	ingest(t, pool, "stripe", "e3", "t", `{"customer": "cus_1", "seq": 3}`)
	head := claim(t, pool, "holder", 10, "10 minutes")
	if len(head) != 1 || head[0].ID != headID {
		t.Fatalf("claimed %v, want only %d", head, headID)
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
	for _, c := range []struct{ name, key, payload, digest string }{
		{"new event before the next one", "e2", `{"customer": "cus_1", "seq": 2}`, ""},
		{"redelivery moving a pending event", "e3", `{"customer": "cus_1", "seq": 0}`, ""},
		{"unsigned key", "e5", `{"customer": "cus_1", "seq": 5}`, strings.Repeat("5", 32)},
	} {
		var digest any
		if c.digest != "" {
			digest = []byte(c.digest)
		}
		start := time.Now()
		_, err := conn.Exec(ctx, `SELECT webhooks.ingest_webhook('stripe', $1, 't', $2::jsonb, body_sha256 => $3)`, c.key, c.payload, digest)
		wantPgError(t, err, "55P03", "stripe/"+c.key+" was not stored: its sequence 'cus_1' is locked")
		if took := time.Since(start); took < 900*time.Millisecond || took > 1900*time.Millisecond {
			t.Fatalf("%s: refused after %v, want after its one-second wait", c.name, took)
		}
	}
	start := time.Now()
	rows, err := conn.Query(ctx, `SELECT outcome, coalesce(error, '') FROM webhooks.ingest_batch(
		ARRAY['stripe', 'stripe', 'stripe', 'github'], ARRAY['e2', 'other', 'e4', 'g1'], ARRAY['t', 't', 't', 'push'],
		ARRAY['{"customer": "cus_1", "seq": 2}', '{"customer": "cus_2", "seq": 1}', '{"customer": "cus_1", "seq": 4}', '{"ref": "main"}']::jsonb[])
		ORDER BY ordinal`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var outcome, msg string
		if err := rows.Scan(&outcome, &msg); err != nil {
			t.Fatal(err)
		}
		got = append(got, outcome)
		if outcome == "retry" && !strings.Contains(msg, "its sequence is locked by another transaction") {
			t.Errorf("retry without its reason: %q", msg)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("ingest_batch: %v", err)
	}
	if took := time.Since(start); !slices.Equal(got, []string{"retry", "created", "retry", "created"}) || took > 700*time.Millisecond {
		t.Fatalf("ingest_batch: %v after %v, want [retry created retry created] after one 250 ms wait", got, took)
	}
	conn.Release()
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id IN ('e2', 'e4', 'e5')`); n != 0 {
		t.Fatalf("%d refused deliveries stored", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'e3' AND order_num = 3 AND revision = 1`); n != 1 {
		t.Fatalf("the refused redelivery changed e3")
	}

	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, outcome := ingest(t, pool, "stripe", "e2", "t", `{"customer": "cus_1", "seq": 2}`); outcome != "created" {
		t.Fatalf("e2 sent again: %s", outcome)
	}
	var runnable []string
	rows, err = pool.Query(ctx, `SELECT external_id FROM webhooks.events WHERE order_key = 'cus_1' AND status = 'pending' AND NOT order_held`)
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
	if !slices.Equal(runnable, []string{"e2"}) {
		t.Fatalf("runnable in cus_1: %v, want [e2] (seq 2 before seq 3)", runnable)
	}
}
