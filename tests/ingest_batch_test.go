package tests

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// batchInput is one element of a webhooks.ingest_batch call.
type batchInput struct {
	provider, key, eventType, payload string
	digest                            []byte
}

// batchRow is one row ingest_batch returns, with the event named by key.
type batchRow struct {
	outcome string
	key     string // the external_id of the event it names ("" when refused)
	refused string // the error of a refused element
}

// ingestBatch runs webhooks.ingest_batch over in and returns its rows with
// each event id turned into the external_id it names.
func ingestBatch(t testing.TB, pool *pgxpool.Pool, in []batchInput) []batchRow {
	t.Helper()
	var providers, keys, types, payloads []string
	var digests [][]byte
	for _, e := range in {
		providers, keys, types, payloads = append(providers, e.provider), append(keys, e.key), append(types, e.eventType), append(payloads, e.payload)
		digests = append(digests, e.digest)
	}
	rows, err := pool.Query(context.Background(), `
		SELECT b.ordinal, b.outcome, coalesce(b.event_id, 0), coalesce(b.error, '')
		FROM webhooks.ingest_batch($1, $2, $3, $4::text[]::jsonb[], body_sha256s => $5) AS b
		ORDER BY b.ordinal`, providers, keys, types, payloads, digests)
	if err != nil {
		t.Fatalf("ingest_batch: %v", err)
	}
	defer rows.Close()
	var out []batchRow
	var ids []int64
	for rows.Next() {
		var ord int
		var id int64
		var r batchRow
		if err := rows.Scan(&ord, &r.outcome, &id, &r.refused); err != nil {
			t.Fatal(err)
		}
		if ord != len(out)+1 {
			t.Fatalf("ordinal %d after %d rows: rows must come in ordinal order", ord, len(out))
		}
		out, ids = append(out, r), append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("ingest_batch: %v", err)
	}
	// The statement that stored the rows cannot see them: name them after.
	for i, id := range ids {
		if id != 0 {
			out[i].key = eventKey(t, pool, id)
		}
	}
	return out
}

// ingestOneByOne stores in with one ingest_webhook call each, in order, and
// returns what ingest_batch should have answered: an element
// ingest_webhook raises on is refused with its message.
func ingestOneByOne(t testing.TB, pool *pgxpool.Pool, in []batchInput) []batchRow {
	t.Helper()
	ctx := context.Background()
	var out []batchRow
	for _, e := range in {
		var r batchRow
		var id int64
		err := pool.QueryRow(ctx, `SELECT event_id, outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb, body_sha256 => $5)`,
			e.provider, e.key, e.eventType, e.payload, e.digest).Scan(&id, &r.outcome)
		if err != nil {
			r = batchRow{outcome: "refused", refused: pgMessage(err)}
		} else {
			r.key = eventKey(t, pool, id)
		}
		out = append(out, r)
	}
	return out
}

// storedEvents is every stored row as text, for comparing two databases.
func storedEvents(t testing.TB, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT format('%s/%s %s %s rev=%s digest=%s', provider, external_id, event_type, payload, revision, encode(body_sha256, 'hex'))
		FROM webhooks.events ORDER BY provider, external_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestIngestBatchMatchesOneByOne feeds random batches — repeated keys inside
// a batch and across batches, changed payloads, unsigned keys with body
// digests (one body under two keys), processed events, and elements
// ingest_webhook refuses — to ingest_batch in one database and to
// ingest_webhook one call at a time in another, and requires the same
// outcome for every element and the same stored rows.
func TestIngestBatchMatchesOneByOne(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			batchDB, oneDB := NewPool(t, 2), NewPool(t, 2)
			rng := rand.New(rand.NewPCG(seed, seed*31+7))
			element := func() batchInput {
				e := batchInput{provider: "stripe", key: fmt.Sprintf("evt_%d", rng.IntN(12)), eventType: "invoice.paid",
					payload: fmt.Sprintf(`{"n": %d}`, rng.IntN(3))}
				switch rng.IntN(10) {
				case 0, 1, 2: // an unsigned key: the digest of the body
					e.provider = "github"
					sum := sha256.Sum256([]byte(e.payload))
					e.digest = sum[:]
				case 3:
					e.key = "  "
				case 4:
					e.payload = `[1, 2]`
				case 5:
					e.eventType = strings.Repeat("x", 300)
				case 6:
					e.digest = []byte("short")
				}
				return e
			}
			for round := 0; round < 6; round++ {
				batch := make([]batchInput, 1+rng.IntN(20))
				for i := range batch {
					batch[i] = element()
				}
				got, want := ingestBatch(t, batchDB, batch), ingestOneByOne(t, oneDB, batch)
				for i := range batch {
					if got[i] != want[i] {
						t.Errorf("round %d element %d (%+v): ingest_batch gave %+v, one by one %+v", round, i+1, batch[i], got[i], want[i])
					}
				}
				// Some events move on, so later rounds see processed rows.
				for _, db := range []*pgxpool.Pool{batchDB, oneDB} {
					execSQL(t, db, `UPDATE webhooks.events SET status = 'processed', processed_at = now()
						WHERE external_id IN ('evt_0', 'evt_5') AND status = 'pending'`)
				}
			}
			a, b := storedEvents(t, batchDB), storedEvents(t, oneDB)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("stored rows differ:\ningest_batch: %v\none by one:   %v", a, b)
			}
			if len(a) == 0 {
				t.Fatal("nothing stored: the random batches tested nothing")
			}
		})
	}
}

// TestIngestBatchOutcomes pins the cases by name: two copies of one key in
// one batch, a refused element between good ones, an unsigned body under a
// second key.
func TestIngestBatchOutcomes(t *testing.T) {
	t.Parallel()
	body := `{"action": "opened"}`
	sum := sha256.Sum256([]byte(body))
	cases := []struct {
		name string
		in   []batchInput
		want []batchRow
	}{
		{"two copies of one key, same payload", []batchInput{
			{"stripe", "evt_1", "t", `{"a": 1}`, nil}, {"stripe", "evt_1", "t", `{"a": 1}`, nil},
		}, []batchRow{{"created", "stripe/evt_1", ""}, {"duplicate", "stripe/evt_1", ""}}},
		{"two copies of one key, the second changed", []batchInput{
			{"stripe", "evt_1", "t", `{"a": 1}`, nil}, {"stripe", "evt_1", "t", `{"a": 2}`, nil},
		}, []batchRow{{"created", "stripe/evt_1", ""}, {"updated", "stripe/evt_1", ""}}},
		{"a refused element between good ones", []batchInput{
			{"stripe", "evt_1", "t", `{}`, nil}, {"stripe", "evt_2", "t", `"text"`, nil}, {"stripe", "", "t", `{}`, nil}, {"stripe", "evt_3", "t", `{}`, nil},
		}, []batchRow{{"created", "stripe/evt_1", ""}, {"refused", "", "pginbox: payload must be a JSON object, got string"},
			{"refused", "", "pginbox: external_id must not be empty"}, {"created", "stripe/evt_3", ""}}},
		{"one unsigned body under two keys", []batchInput{
			{"github", "d-1", "t", body, sum[:]}, {"github", "d-2", "t", body, sum[:]},
		}, []batchRow{{"created", "github/d-1", ""}, {"duplicate", "github/d-1", ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ingestBatch(t, NewPool(t, 1), tc.in)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestIngestBatchArraysOfOneLength: arrays of different lengths are a
// caller's bug, raised as 22023 before anything is written.
func TestIngestBatchArraysOfOneLength(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	_, err := pool.Exec(context.Background(), `SELECT * FROM webhooks.ingest_batch(
		ARRAY['stripe', 'stripe'], ARRAY['evt_1'], ARRAY['t', 't'], ARRAY['{}', '{}']::jsonb[])`)
	wantPgError(t, err, "22023", "arrays of one length")
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 0 {
		t.Fatalf("%d rows written by a refused call", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.ingest_batch('{}', '{}', '{}', '{}')`); n != 0 {
		t.Fatalf("an empty batch returned %d rows", n)
	}
}

// TestIngestBatchConcurrent sends overlapping batches of 400 keys from 16
// connections and requires one row and one 'created' per key.
func TestIngestBatchConcurrent(t *testing.T) {
	t.Parallel()
	const keys, senders = 400, 16
	pool := NewPool(t, senders)
	var mu sync.Mutex
	created := map[string]int{}
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			order := rand.New(rand.NewPCG(seed, seed+1)).Perm(keys)
			for len(order) > 0 {
				n := min(len(order), 25)
				var batch []batchInput
				for _, i := range order[:n] {
					batch = append(batch, batchInput{"sume", fmt.Sprintf("job_%03d", i), "job.completed", fmt.Sprintf(`{"job_id": "job_%03d"}`, i), nil})
				}
				order = order[n:]
				for _, r := range ingestBatch(t, pool, batch) {
					mu.Lock()
					if r.outcome == "created" {
						created[r.key]++
					} else if r.outcome != "duplicate" {
						t.Errorf("%s: outcome %q for an identical payload", r.key, r.outcome)
					}
					mu.Unlock()
				}
			}
		}(uint64(s + 1))
	}
	wg.Wait()
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != keys {
		t.Fatalf("rows = %d, want %d", n, keys)
	}
	if len(created) != keys {
		t.Fatalf("keys created = %d, want %d", len(created), keys)
	}
	for k, n := range created {
		if n != 1 {
			t.Errorf("%s created %d times", k, n)
		}
	}
}

// pgMessage is the message of a Postgres error, or the error's text.
func pgMessage(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Message
	}
	return err.Error()
}

// eventKey names event id as provider/external_id.
func eventKey(t testing.TB, pool *pgxpool.Pool, id int64) string {
	t.Helper()
	var key string
	if err := pool.QueryRow(context.Background(), `SELECT provider || '/' || external_id FROM webhooks.events WHERE id = $1`, id).Scan(&key); err != nil {
		t.Fatalf("event %d: %v", id, err)
	}
	return key
}
