package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner/verify"
)

const stripeSecret = "whsec_batch_test_secret"

// batchServer serves a Receiver that batches with one flusher, so that
// deliveries sent together queue behind the first one and share a commit.
func batchServer(t *testing.T, pool *pgxpool.Pool, timeout time.Duration) (*httptest.Server, *metrics.Set) {
	t.Helper()
	p, err := verify.New("stripe", []string{stripeSecret})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(nil)
	rc := &Receiver{Pool: pool, Providers: map[string]verify.Provider{"stripe": p}, MaxBody: 1 << 20,
		Timeout: timeout, Metrics: m, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxBatch: 64, Flushers: 1}
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/{provider}", rc)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, m
}

// answer is one delivery's HTTP answer.
type answer struct {
	status  int
	eventID int64
	outcome string
	err     string
}

// sendAll posts every body at once (released together) and returns the
// answers in the same order.
func sendAll(t *testing.T, base string, bodies []string) []answer {
	t.Helper()
	out := make([]answer, len(bodies))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/stripe", bytes.NewReader([]byte(body)))
			for k, v := range testsign.Stripe(stripeSecret, body, time.Now()) {
				req.Header[k] = v
			}
			req.Header.Set("Content-Type", "application/json")
			<-start
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out[i] = answer{err: err.Error()}
				return
			}
			defer resp.Body.Close()
			var v struct {
				EventID int64  `json:"event_id"`
				Outcome string `json:"outcome"`
				Error   string `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&v)
			out[i] = answer{resp.StatusCode, v.EventID, v.Outcome, v.Error}
		}()
	}
	close(start)
	wg.Wait()
	return out
}

func stripeBody(id string, n int) string {
	return fmt.Sprintf(`{"id": %q, "type": "invoice.paid", "n": %d}`, id, n)
}

// TestBatchAnswersEachDeliveryItsOwnOutcome: 48 deliveries sent at once —
// 40 new ids, 4 identical copies of one of them, 4 changed copies of
// another — share commits (the batch-size histogram shows batches larger
// than one) and each gets the answer storing it alone would give: one
// created per id, the copies duplicate or updated with the same event id.
func TestBatchAnswersEachDeliveryItsOwnOutcome(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 8)
	srv, m := batchServer(t, pool, 10*time.Second)
	var bodies []string
	for i := 0; i < 40; i++ {
		bodies = append(bodies, stripeBody(fmt.Sprintf("evt_%02d", i), 0))
	}
	for i := 0; i < 4; i++ {
		bodies = append(bodies, stripeBody("evt_00", 0), stripeBody("evt_01", i+1))
	}
	answers := sendAll(t, srv.URL, bodies)

	ids := map[string]int64{}
	created := map[string]int{}
	for i, a := range answers {
		var v struct{ ID string }
		_ = json.Unmarshal([]byte(bodies[i]), &v)
		if a.status != http.StatusOK {
			t.Fatalf("delivery %d (%s): %d %s", i, v.ID, a.status, a.err)
		}
		if prev, ok := ids[v.ID]; ok && prev != a.eventID {
			t.Errorf("%s answered with event ids %d and %d", v.ID, prev, a.eventID)
		}
		ids[v.ID] = a.eventID
		switch a.outcome {
		case "created":
			created[v.ID]++
		case "duplicate", "updated":
			if v.ID != "evt_00" && v.ID != "evt_01" {
				t.Errorf("%s: %s for an id sent once", v.ID, a.outcome)
			}
			if a.outcome == "updated" && v.ID != "evt_01" {
				t.Errorf("%s: updated for an identical copy", v.ID)
			}
		default:
			t.Errorf("%s: outcome %q", v.ID, a.outcome)
		}
	}
	for id := range ids {
		if created[id] != 1 {
			t.Errorf("%s created %d times", id, created[id])
		}
	}
	var rows int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM webhooks.events`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 40 {
		t.Fatalf("%d rows, want 40", rows)
	}
	var h dto.Metric
	if err := m.IngestBatchSize.Write(&h); err != nil {
		t.Fatal(err)
	}
	batches := h.GetHistogram().GetSampleCount()
	if sum := h.GetHistogram().GetSampleSum(); sum != float64(len(bodies)) {
		t.Fatalf("batches held %v deliveries, want %d", sum, len(bodies))
	}
	if batches >= uint64(len(bodies)) {
		t.Fatalf("%d batches for %d deliveries sent at once: nothing shared a commit", batches, len(bodies))
	}
	t.Logf("%d deliveries in %d batches", len(bodies), batches)
}

// TestBatchRefusedRowCostsOnlyItsDelivery: a row Postgres refuses (here a
// CHECK constraint an operator added) fails its batch statement as a whole;
// the batch is then stored delivery by delivery, so only that delivery is
// answered 400 and its neighbours are stored.
func TestBatchRefusedRowCostsOnlyItsDelivery(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 8)
	if _, err := pool.Exec(context.Background(),
		`ALTER TABLE webhooks.inbox ADD CONSTRAINT no_poison CHECK (external_id <> 'evt_poison')`); err != nil {
		t.Fatal(err)
	}
	srv, _ := batchServer(t, pool, 10*time.Second)
	var bodies []string
	for i := 0; i < 30; i++ {
		bodies = append(bodies, stripeBody(fmt.Sprintf("evt_%02d", i), 0))
		if i == 15 {
			bodies = append(bodies, stripeBody("evt_poison", 0))
		}
	}
	for i, a := range sendAll(t, srv.URL, bodies) {
		want := http.StatusOK
		if bodies[i] == stripeBody("evt_poison", 0) {
			want = http.StatusBadRequest
		}
		if a.status != want {
			t.Errorf("delivery %d: %d %s %s, want %d", i, a.status, a.outcome, a.err, want)
		}
	}
	var rows int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM webhooks.events`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 30 {
		t.Fatalf("%d rows, want the 30 good deliveries", rows)
	}
}

// TestBatchDatabaseUnavailableAnswers503: while the table is locked past the
// ingest timeout, every delivery of the batch is answered 503, never 200.
// When the database takes writes again the provider's retries store each
// event exactly once. (A statement the client gave up on can still commit
// on the server after the 503, as with a delivery stored alone: its retry is
// then a duplicate, which is why the retries are part of the test.)
func TestBatchDatabaseUnavailableAnswers503(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 8)
	srv, _ := batchServer(t, pool, 500*time.Millisecond)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE webhooks.events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for i := 0; i < 12; i++ {
		bodies = append(bodies, stripeBody(fmt.Sprintf("evt_%02d", i), 0))
	}
	answers := sendAll(t, srv.URL, bodies)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for i, a := range answers {
		if a.status != http.StatusServiceUnavailable {
			t.Errorf("delivery %d: %d %s, want 503", i, a.status, a.outcome)
		}
	}
	created := 0
	for i, a := range sendAll(t, srv.URL, bodies) {
		if a.status != http.StatusOK || (a.outcome != "created" && a.outcome != "duplicate") {
			t.Errorf("retry of delivery %d: %d %s %s", i, a.status, a.outcome, a.err)
		}
		if a.outcome == "created" {
			created++
		}
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.events`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(bodies) {
		t.Fatalf("%d rows after the retries, want %d: one per event", rows, len(bodies))
	}
	t.Logf("%d of %d retries created their event; the rest had been committed after their 503", created, len(bodies))
}
