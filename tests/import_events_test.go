package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// importEvents calls webhooks.import_events with events marshalled to JSON
// and returns its counts, or the error.
func importEvents(ctx context.Context, q *pgxpool.Pool, provider string, events any) (imported, duplicates int64, err error) {
	b, err := json.Marshal(events)
	if err != nil {
		return 0, 0, err
	}
	var res struct {
		Imported   int64 `json:"imported"`
		Duplicates int64 `json:"duplicates"`
	}
	if err := q.QueryRow(ctx, `SELECT webhooks.import_events($1, $2::jsonb)`, provider, string(b)).Scan(&res); err != nil {
		return 0, 0, err
	}
	return res.Imported, res.Duplicates, nil
}

// ev is one element of import_events' array.
func ev(externalID, eventType string, receivedAt time.Time, payload any) map[string]any {
	m := map[string]any{"external_id": externalID, "event_type": eventType, "received_at": receivedAt.Format(time.RFC3339Nano)}
	if payload != nil {
		m["payload"] = payload
	}
	return m
}

// TestImportEvents: imported keys answer duplicate to ingest_webhook, keys
// already stored and repeats within the array are counted as duplicates
// (the first of a repeat wins), each event keeps its own received_at in the
// day slice of that UTC day, created for it, processed with processed_at =
// received_at and source import; a null payload is stored as pruned; a day
// prune() dropped gets the key only.
func TestImportEvents(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	q := pool

	storedID, _ := ingest(t, pool, "legacy", "stored", "job.completed", `{"n": 0}`)
	old := time.Date(2024, 3, 1, 1, 30, 0, 123456000, time.FixedZone("", 2*3600)) // 2024-02-29 23:30 UTC
	older := time.Date(2023, 11, 5, 10, 0, 0, 0, time.UTC)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.history_days WHERE day IN ('2024-02-29', '2023-11-05')`); n != 0 {
		t.Fatalf("the days exist before the import: %d", n)
	}

	imported, dups, err := importEvents(ctx, q, "legacy", []any{
		ev("a", "job.completed", old, map[string]any{"n": 1}),
		ev("stored", "job.completed", old, map[string]any{"n": 2}),
		ev("a", "job.failed", older, map[string]any{"n": 3}),
		ev("b", "job.failed", older, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if imported != 2 || dups != 2 {
		t.Fatalf("imported %d, duplicates %d; want 2 and 2", imported, dups)
	}

	type row struct {
		id                     int64
		status, eventType, src string
		receivedAt             time.Time
		processedAt            *time.Time
		payload                *string
		pruned                 bool
		attempts               int
	}
	get := func(externalID string) row {
		t.Helper()
		var r row
		err := pool.QueryRow(ctx, `SELECT id, status, event_type, source, received_at, processed_at, payload::text,
				payload_pruned_at IS NOT NULL, attempts
			FROM webhooks.events WHERE provider = 'legacy' AND external_id = $1`, externalID).
			Scan(&r.id, &r.status, &r.eventType, &r.src, &r.receivedAt, &r.processedAt, &r.payload, &r.pruned, &r.attempts)
		if err != nil {
			t.Fatalf("event %s: %v", externalID, err)
		}
		return r
	}
	a := get("a")
	if a.status != "processed" || a.eventType != "job.completed" || a.src != "import" || a.attempts != 0 ||
		!a.receivedAt.Equal(old) || a.processedAt == nil || !a.processedAt.Equal(old) || a.payload == nil || *a.payload != `{"n": 1}` || a.pruned {
		t.Errorf("event a: %+v; want processed job.completed from import, received and processed at %s, payload {\"n\": 1}", a, old)
	}
	b := get("b")
	if b.status != "processed" || !b.receivedAt.Equal(older) || b.payload != nil || !b.pruned {
		t.Errorf("event b: %+v; want processed at %s with its payload pruned", b, older)
	}
	if s := get("stored"); s.id != storedID || s.src != "webhook" {
		t.Errorf("the stored event changed: %+v", s)
	}
	// Each in its own day's slice (UTC), created by the import.
	for externalID, slice := range map[string]string{"a": "history_20240229", "b": "history_20231105"} {
		var where string
		if err := pool.QueryRow(ctx, `SELECT h.tableoid::regclass::text FROM webhooks.history AS h
			WHERE h.provider = 'legacy' AND h.external_id = $1`, externalID).Scan(&where); err != nil {
			t.Fatalf("event %s in webhooks.history: %v", externalID, err)
		}
		if where != "webhooks."+slice {
			t.Errorf("event %s is in %s, want webhooks.%s", externalID, where, slice)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.history_days WHERE state = 'live'
			AND day = to_date($1, '"history_"YYYYMMDD')`, slice); n != 1 {
			t.Errorf("history_days has no live row for %s", slice)
		}
	}
	// The keys point at the events and answer duplicate from now on.
	for _, externalID := range []string{"a", "b"} {
		var keyID int64
		if err := pool.QueryRow(ctx, `SELECT event_id FROM webhooks.keys WHERE provider = 'legacy' AND external_id = $1`,
			externalID).Scan(&keyID); err != nil {
			t.Fatal(err)
		}
		if r := get(externalID); r.id != keyID {
			t.Errorf("key %s names event %d, the event is %d", externalID, keyID, r.id)
		}
		id, outcome := ingest(t, pool, "legacy", externalID, "job.completed", `{"n": 9}`)
		if outcome != "duplicate" || id != keyID {
			t.Errorf("ingest of imported key %s: %s %d, want duplicate %d", externalID, outcome, id, keyID)
		}
	}
	// Importing the same history again changes nothing.
	imported, dups, err = importEvents(ctx, q, "legacy", []any{ev("a", "x", old, nil), ev("b", "x", old, nil)})
	if err != nil || imported != 0 || dups != 2 {
		t.Fatalf("second import: %d, %d, %v; want 0 imported, 2 duplicates", imported, dups, err)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'legacy'`); n != 3 {
		t.Errorf("%d events of legacy, want 3", n)
	}

	// A day prune() dropped: the key only, and no slice again.
	execSQL(t, pool, `INSERT INTO webhooks.history_days (day, state, dropped_at, events) VALUES ('2023-06-01', 'dropped', now(), 0)`)
	imported, dups, err = importEvents(ctx, q, "legacy", []any{ev("gone", "job.completed", time.Date(2023, 6, 1, 12, 0, 0, 0, time.UTC), map[string]any{})})
	if err != nil || imported != 1 || dups != 0 {
		t.Fatalf("import into a dropped day: %d, %d, %v; want 1 imported", imported, dups, err)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys WHERE provider = 'legacy' AND external_id = 'gone'
		AND received_at = '2023-06-01 12:00:00+00'`); n != 1 {
		t.Error("the key of the dropped day's event was not stored with its received_at")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'legacy' AND external_id = 'gone'`); n != 0 {
		t.Error("an event was stored for a day prune() dropped")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM pg_class WHERE oid = to_regclass('webhooks.history_20230601')`); n != 0 {
		t.Error("the dropped day's slice was created again")
	}
	if _, outcome := ingest(t, pool, "legacy", "gone", "job.completed", `{}`); outcome != "duplicate" {
		t.Errorf("ingest of the key imported into a dropped day: %s, want duplicate", outcome)
	}
	// An empty array imports nothing.
	if imported, dups, err = importEvents(ctx, q, "legacy", []any{}); err != nil || imported != 0 || dups != 0 {
		t.Errorf("empty import: %d, %d, %v", imported, dups, err)
	}
}

// TestImportEventsRefusesBadElements: the first bad element raises 22023
// naming its index, counted from 0, and nothing of the call is imported
// (the good elements before it included); errors about the whole call
// raise their own SQLSTATE.
func TestImportEventsRefusesBadElements(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	q := pool
	at := time.Now().Add(-48 * time.Hour).UTC()
	good := func(id string) any { return ev(id, "job.completed", at, map[string]any{"ok": true}) }
	with := func(k string, v any) map[string]any {
		m := ev("bad", "job.completed", at, map[string]any{})
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := []struct {
		name string
		bad  any
		want string
	}{
		{"a string", "hello", "is a JSON string, not an object"},
		{"an array", []int{1}, "is a JSON array, not an object"},
		{"null", raw("null"), "is a JSON null, not an object"},
		{"an unknown key", with("status", "processed"), `has the unknown key "status"`},
		{"no external_id", with("external_id", nil), "external_id is missing"},
		{"a null external_id", with("external_id", raw("null")), "external_id is missing"},
		{"a numeric external_id", with("external_id", 42), "external_id must be a string, got a JSON number"},
		{"a blank external_id", with("external_id", " \t"), "external_id must not be blank"},
		{"a long external_id", with("external_id", strings.Repeat("é", 128)), "external_id is 256 bytes long; the limit is 255 bytes"},
		{"no event_type", with("event_type", nil), "event_type is missing"},
		{"an object event_type", with("event_type", map[string]any{}), "event_type must be a string, got a JSON object"},
		{"a blank event_type", with("event_type", ""), "event_type must not be blank"},
		{"a long event_type", with("event_type", strings.Repeat("x", 256)), "event_type is 256 bytes long"},
		{"no received_at", with("received_at", nil), "received_at is missing"},
		{"a numeric received_at", with("received_at", 1714560000), "received_at must be a string, got a JSON number"},
		{"received_at without an offset", with("received_at", "2024-05-01T12:00:00"), `received_at "2024-05-01T12:00:00" is not an RFC 3339 timestamp with an offset`},
		{"received_at without seconds", with("received_at", "2024-05-01T12:00Z"), "is not an RFC 3339 timestamp"},
		{"received_at now", with("received_at", "now"), `received_at "now" is not an RFC 3339 timestamp`},
		{"received_at hour 24", with("received_at", "2024-05-01T24:00:00Z"), "is not an RFC 3339 timestamp"},
		{"received_at offset 16 hours", with("received_at", "2024-05-01T12:00:00+16:00"), "is not an RFC 3339 timestamp"},
		{"received_at February 30", with("received_at", "2024-02-30T12:00:00Z"), `received_at "2024-02-30T12:00:00Z" is not a day of its month`},
		{"received_at February 29 of 2023", with("received_at", "2023-02-29T12:00:00Z"), "is not a day of its month"},
		{"received_at year 0", with("received_at", "0000-01-01T00:00:00Z"), "is before 2000-01-01 UTC"},
		{"received_at in 1999", with("received_at", "1999-12-31T23:59:59Z"), "is before 2000-01-01 UTC"},
		{"received_at an hour ahead", with("received_at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), "is more than 5 minutes in the future"},
		{"an array payload", with("payload", []int{}), "payload must be a JSON object or null, got a JSON array"},
		{"a string payload", with("payload", "{}"), "payload must be a JSON object or null, got a JSON string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			provider := "bad" + strings.ReplaceAll(tc.name, " ", "_")
			if len(provider) > 64 {
				provider = provider[:64]
			}
			// Good ones before and after; a later bad one is not the one named.
			events := []any{good("g0"), good("g1"), tc.bad, good("g3"), "also bad"}
			_, _, err := importEvents(ctx, q, provider, events)
			wantPgError(t, err, "22023", "pginbox: events[2] (0-based): ")
			wantPgError(t, err, "22023", tc.want)
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys WHERE provider = $1`, provider); n != 0 {
				t.Errorf("%d keys imported from a refused call", n)
			}
		})
	}

	// Edge values that are fine.
	imported, _, err := importEvents(ctx, q, "edges", []any{
		map[string]any{"external_id": strings.Repeat("x", 255), "event_type": "t", "received_at": "2024-02-29t23:59:59.123456789z"},
		map[string]any{"external_id": "leap", "event_type": "t", "received_at": "1999-12-31 23:30:00-05:00", "payload": nil},
		map[string]any{"external_id": "soon", "event_type": "t", "received_at": time.Now().Add(4 * time.Minute).Format(time.RFC3339)},
	})
	if err != nil || imported != 3 {
		t.Fatalf("edge values: %d imported, %v; want 3", imported, err)
	}

	// The whole call.
	for _, tc := range []struct {
		name, provider, events, code, want string
	}{
		{"null events", "p", "", "22004", "events must not be null"},
		{"an object", "p", `{"external_id": "x"}`, "22023", "events must be a JSON array, got a JSON object"},
		{"a blank provider", " ", `[]`, "22023", "provider must not be empty"},
		{"a long provider", strings.Repeat("p", 65), `[]`, "22001", "provider is 65 bytes long"},
		{"too many", "p", "[" + strings.Repeat(`{},`, 10000) + "{}]", "54000", "10001 events in one import; the limit is 10000"},
	} {
		var events *string
		if tc.events != "" {
			events = &tc.events
		}
		_, err := pool.Exec(ctx, `SELECT webhooks.import_events($1, $2::jsonb)`, tc.provider, events)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tc.code || !strings.Contains(pgErr.Message, tc.want) {
			t.Errorf("%s: got %v, want %s %q", tc.name, err, tc.code, tc.want)
		}
	}
}

// TestImportEventsOwnerOnly: like prune(), import_events is the schema
// owner's: no grant set lets a role call it.
func TestImportEventsOwnerOnly(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	suffix := strings.ReplaceAll(conf.Database[len(conf.Database)-8:], "-", "")
	ctx := context.Background()
	for _, grant := range []string{"grant_ingest", "grant_ingest_signed", "grant_worker", "grant_reader"} {
		c := roleConn(t, conf.URL(), "pginbox_imp_"+strings.TrimPrefix(grant, "grant_")+"_"+suffix, grant)
		_, err := c.Exec(ctx, `SELECT webhooks.import_events('p', '[{"external_id": "x", "event_type": "t", "received_at": "2024-05-01T00:00:00Z"}]')`)
		wantPgError(t, err, "42501", "permission denied for function import_events")
	}
	owner := PoolFor(t, conf.URL(), 1)
	if n := queryInt(t, owner, `SELECT count(*) FROM webhooks.keys`); n != 0 {
		t.Errorf("%d keys stored by roles that may not import", n)
	}
}

// TestImportEventsConcurrentWithIngest: two importers and four ingesters
// race over the same keys; every key ends with exactly one event, named by
// its key, and each was stored by exactly one of them (imported + created
// = keys).
func TestImportEventsConcurrentWithIngest(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 12)
	ctx := context.Background()
	const keys = 1200
	at := time.Now().Add(-72 * time.Hour).UTC()
	var mu sync.Mutex
	var imported, created int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			order := rand.New(rand.NewSource(seed)).Perm(keys)
			for start := 0; start < keys; start += 200 {
				var events []any
				for _, k := range order[start : start+200] {
					events = append(events, ev(fmt.Sprintf("k%04d", k), "job.completed", at, map[string]any{"k": k}))
				}
				n, _, err := importEvents(ctx, pool, "race", events)
				if err != nil {
					errs <- fmt.Errorf("import: %w", err)
					return
				}
				mu.Lock()
				imported += n
				mu.Unlock()
			}
		}(int64(w + 1))
	}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			for _, k := range rand.New(rand.NewSource(seed)).Perm(keys)[:keys/2] {
				var outcome string
				err := pool.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_webhook('race', $1, 'job.completed', '{}')`,
					fmt.Sprintf("k%04d", k)).Scan(&outcome)
				if err != nil {
					errs <- fmt.Errorf("ingest: %w", err)
					return
				}
				if outcome == "created" {
					mu.Lock()
					created++
					mu.Unlock()
				}
			}
		}(int64(w + 10))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if imported+created != keys {
		t.Errorf("imported %d + created %d = %d, want %d keys stored once each", imported, created, imported+created, keys)
	}
	if created == 0 || imported == 0 {
		t.Errorf("imported %d, created %d: the race did not overlap", imported, created)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys WHERE provider = 'race'`); n != keys {
		t.Errorf("%d keys, want %d", n, keys)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM (SELECT external_id FROM webhooks.events WHERE provider = 'race'
		GROUP BY external_id HAVING count(*) = 1) AS once`); n != keys {
		t.Errorf("%d keys with exactly one event, want %d", n, keys)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys AS k JOIN webhooks.events AS e
		ON e.id = k.event_id AND e.external_id = k.external_id AND e.provider = k.provider
		WHERE k.provider = 'race'`); n != keys {
		t.Errorf("%d keys name their event, want %d", n, keys)
	}
}

// TestImportEventsDuringUpgrade: while an upgrade has not copied every
// old key into webhooks.keys (the queue still has its old unique key), a
// key found only in the queue is a duplicate too, and no second event is
// stored under it.
func TestImportEventsDuringUpgrade(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	// An event stored before the upgrade, its key not copied yet.
	execSQL(t, pool, `ALTER TABLE webhooks.inbox ADD CONSTRAINT events_provider_external_id_key UNIQUE (provider, external_id)`)
	execSQL(t, pool, `INSERT INTO webhooks.inbox (provider, external_id, event_type, payload) VALUES ('old', 'before', 't', '{}')`)
	at := time.Now().Add(-24 * time.Hour)
	imported, dups, err := importEvents(ctx, pool, "old", []any{ev("before", "t", at, nil), ev("new", "t", at, nil)})
	if err != nil || imported != 1 || dups != 1 {
		t.Fatalf("import: %d, %d, %v; want 1 imported and the queue's key a duplicate", imported, dups, err)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'old' AND external_id = 'before'`); n != 1 {
		t.Errorf("%d events under the queue's old key, want 1", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys WHERE provider = 'old' AND external_id = 'before'`); n != 0 {
		t.Errorf("the import wrote a key over the queue's old one (%d)", n)
	}
}
