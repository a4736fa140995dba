package tests

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Retention on storage v2 (issue 36): prune() drops whole days of
// webhooks.history, the keys stay in webhooks.keys until keep_keys, and
// move_history() lands an event whatever its day. The load, pg_cron and
// kill -9 cases are in the storage_retention_*_test.go files beside this one.

// pruneResult is webhooks.prune()'s jsonb answer.
type pruneResult struct {
	Payloads int64   `json:"payloads_pruned"`
	Events   int64   `json:"events_deleted"`
	Days     int64   `json:"days_dropped"`
	Busy     *string `json:"busy"`
	More     bool    `json:"more"`
}

// rowQueryer is what pruneCall needs of a pool or a connection.
type rowQueryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pruneCall runs one webhooks.prune(keepPayload, keepKeys[, named args]).
func pruneCall(ctx context.Context, q rowQueryer, keepPayload, keepKeys, named string) (pruneResult, error) {
	var raw []byte
	sql := `SELECT webhooks.prune($1::interval, $2::interval` + named + `)`
	if err := q.QueryRow(ctx, sql, keepPayload, keepKeys).Scan(&raw); err != nil {
		return pruneResult{}, fmt.Errorf("prune: %w", err)
	}
	var out pruneResult
	if err := json.Unmarshal(raw, &out); err != nil {
		return pruneResult{}, fmt.Errorf("prune: %w", err)
	}
	return out, nil
}

// pruneUntilDone calls prune the way the runner does (max_rows 5000 a
// call) until it reports no more work, and returns the days it dropped.
func pruneUntilDone(t testing.TB, pool *pgxpool.Pool, keepPayload, keepKeys string) int64 {
	t.Helper()
	days := int64(0)
	for i := 0; ; i++ {
		out, err := pruneCall(context.Background(), pool, keepPayload, keepKeys, `, batch_size => 1000, max_rows => 5000`)
		if err != nil {
			t.Fatal(err)
		}
		days += out.Days
		if !out.More {
			return days
		}
		if i > 1000 {
			t.Fatalf("prune still reports more after %d calls: %+v", i, out)
		}
	}
}

// moveResult is webhooks.move_history()'s jsonb answer.
type moveResult struct {
	Moved   int64 `json:"moved"`
	Deleted int64 `json:"deleted"`
	More    bool  `json:"more"`
}

// moveAll calls webhooks.move_history() until it has nothing more to do and
// returns what it moved into history and what it deleted.
func moveAll(t testing.TB, pool *pgxpool.Pool) moveResult {
	t.Helper()
	var sum moveResult
	for i := 0; ; i++ {
		var raw []byte
		if err := pool.QueryRow(context.Background(), `SELECT webhooks.move_history(1000)`).Scan(&raw); err != nil {
			t.Fatalf("move_history: %v", err)
		}
		var out moveResult
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		sum.Moved += out.Moved
		sum.Deleted += out.Deleted
		if !out.More {
			return sum
		}
		if i > 1000 {
			t.Fatal("move_history still reports more after 1000 calls")
		}
	}
}

// sliceName is the day slice of webhooks.history holding event id
// (webhooks.history_YYYYMMDD of its received_at, UTC), and that day as
// YYYY-MM-DD.
func sliceName(t testing.TB, pool *pgxpool.Pool, id int64) (slice, day string) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `
		SELECT 'history_' || to_char((k.received_at AT TIME ZONE 'UTC')::date, 'YYYYMMDD'),
		       to_char((k.received_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD')
		FROM webhooks.keys AS k WHERE k.event_id = $1`, id).Scan(&slice, &day)
	if err != nil {
		t.Fatalf("the day of event %d: %v", id, err)
	}
	return slice, day
}

// sliceExists tells whether webhooks.<slice> exists.
func sliceExists(t testing.TB, pool *pgxpool.Pool, slice string) bool {
	t.Helper()
	return queryInt(t, pool, `SELECT (to_regclass('webhooks.' || $1) IS NOT NULL)::int`, slice) == 1
}

// backdateQueued moves the received_at of queued events (webhooks.inbox)
// and of their keys back by ago, as if they had been received then.
func backdateQueued(t testing.TB, pool *pgxpool.Pool, ago string, ids []int64) {
	t.Helper()
	execSQL(t, pool, `UPDATE webhooks.inbox SET received_at = received_at - $1::interval WHERE id = ANY ($2)`, ago, ids)
	execSQL(t, pool, `UPDATE webhooks.keys SET received_at = received_at - $1::interval WHERE event_id = ANY ($2)`, ago, ids)
}

// seedHistoryDays writes perDay processed events into each day from
// fromAgo to toAgo days before today (UTC), straight into their slices of
// webhooks.history (created first) and their keys into webhooks.keys, the
// way move_history() leaves them. Even rows go to provider sp (keyed by the
// signed body, no digest), odd ones to sd (with the SHA-256 of their key as
// body digest); external_id is k<daysAgo>_<n>. It returns the largest id.
func seedHistoryDays(t testing.TB, pool *pgxpool.Pool, fromAgo, toAgo, perDay int) int64 {
	t.Helper()
	execSQL(t, pool, `SELECT webhooks._history_slice((now() AT TIME ZONE 'UTC')::date - d)
		FROM generate_series($1::int, $2::int) AS d`, fromAgo, toAgo)
	execSQL(t, pool, `
		INSERT INTO webhooks.history (id, provider, external_id, event_type, status, payload, received_at,
		                              updated_at, claimed_at, processed_at, attempts, body_sha256)
		SELECT nextval('webhooks.events_id_seq'), s.provider, s.key, 'thing.happened', 'processed',
		       jsonb_build_object('key', s.key, 'pad', repeat('x', 200)), s.at, s.at, s.at, s.at, 1,
		       CASE WHEN s.provider = 'sd' THEN sha256(convert_to(s.key, 'UTF8')) END
		FROM (SELECT CASE WHEN g % 2 = 0 THEN 'sp' ELSE 'sd' END AS provider, 'k' || d || '_' || g AS key,
		             ((now() AT TIME ZONE 'UTC')::date - d)::timestamp AT TIME ZONE 'UTC'
		               + g * (interval '86399 seconds' / $3::int) AS at
		      FROM generate_series($1::int, $2::int) AS d, generate_series(1, $3::int) AS g) AS s`,
		fromAgo, toAgo, perDay)
	execSQL(t, pool, `
		INSERT INTO webhooks.keys (provider, external_id, event_id, received_at, body_sha256)
		SELECT h.provider, h.external_id, h.id, h.received_at, h.body_sha256 FROM webhooks.history AS h
		WHERE h.provider IN ('sp', 'sd') AND h.external_id LIKE 'k%'`)
	execSQL(t, pool, `ANALYZE webhooks.keys`)
	return queryInt(t, pool, `SELECT max(event_id) FROM webhooks.keys`)
}

// digest is the SHA-256 of s, as ingest_webhook's body_sha256.
func digest(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// mustIngestDigest is ingestDigest failing t on an error.
func mustIngestDigest(t testing.TB, pool *pgxpool.Pool, provider, key, body string) (int64, string) {
	t.Helper()
	id, outcome, err := ingestDigest(context.Background(), pool, provider, key, body)
	if err != nil {
		t.Fatalf("ingest %s/%s with a digest: %v", provider, key, err)
	}
	return id, outcome
}

// ingestSignedAs calls ingest_signed with headers signed for kind.
func ingestSignedAs(t testing.TB, pool *pgxpool.Pool, provider, kind, secret, key, body string) (int64, string) {
	t.Helper()
	var id int64
	var outcome string
	err := pool.QueryRow(context.Background(), `
		SELECT event_id, outcome FROM webhooks.ingest_signed($1, $2::jsonb, convert_to($3, 'UTF8'))`,
		provider, signedHeaders(kind, secret, key, body, time.Now()), body).Scan(&id, &outcome)
	if err != nil {
		t.Fatalf("ingest_signed %s/%s: %v", provider, key, err)
	}
	return id, outcome
}

// TestRetentionKeysOutliveDroppedDays: events processed 40 days ago, moved
// into their day of history, lose that day to prune('30 days', '400
// days'): the slice is gone, history_days says dropped with the ids it
// held, and yet every key answers 'duplicate' with its first id — signed
// body keys (ingest_webhook without a digest, ingest_signed stripe) and
// unsigned ones (body_sha256, ingest_signed github), under their key or a
// new key with the same body. replay() of such an event raises 55000 naming
// the day; tombstone(), expect(), find_gaps(), find_sequence_gaps() and
// reconcile() count the key as arrived. Once keep_keys has passed, prune
// deletes the keys and each key is 'created' again, with a new id.
func TestRetentionKeysOutliveDroppedDays(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	const secret = "retention-secret-0123456789"
	execSQL(t, pool, `SELECT webhooks.set_provider('st', 'stripe', ARRAY[$1])`, secret)
	execSQL(t, pool, `SELECT webhooks.set_provider('gh', 'github', ARRAY[$1])`, secret)

	signedID, _ := ingest(t, pool, "sume", "ret_signed", "job.completed", `{"job_id": "ret_signed"}`)
	digestID, _ := mustIngestDigest(t, pool, "sume", "ret_digest", `{"job_id": "ret_digest"}`)
	stripeBody := `{"id": "evt_ret_1", "type": "charge.succeeded"}`
	stripeID, _ := ingestSignedAs(t, pool, "st", "stripe", secret, "", stripeBody)
	githubBody := `{"ref": "refs/heads/main", "after": "ret"}`
	githubID, _ := ingestSignedAs(t, pool, "gh", "github", secret, "gh-ret-1", githubBody)
	ids := []int64{signedID, digestID, stripeID, githubID}
	for _, seq := range []string{"101", "102", "103"} {
		id, _ := ingest(t, pool, "seq", seq, "thing.happened", `{}`)
		ids = append(ids, id)
	}
	if n := processAll(t, pool, "w"); n != len(ids) {
		t.Fatalf("processed %d events, want %d", n, len(ids))
	}
	backdateQueued(t, pool, "40 days", ids)
	slice, day := sliceName(t, pool, signedID)
	if sliceExists(t, pool, slice) {
		t.Fatalf("%s exists before any event of its day was moved: the test would not show it made on demand", slice)
	}
	if got := moveAll(t, pool); got.Moved != int64(len(ids)) {
		t.Fatalf("move_history moved %d events, want %d", got.Moved, len(ids))
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.`+slice); n != int64(len(ids)) {
		t.Fatalf("%s holds %d events, want %d", slice, n, len(ids))
	}
	_, _ = ingest(t, pool, "seq", "105", "thing.happened", `{}`) // a live one after the gap 104

	out, err := pruneCall(ctx, pool, "30 days", "400 days", "")
	if err != nil {
		t.Fatal(err)
	}
	if out.Days < 1 || out.Payloads < int64(len(ids)) || out.Events != 0 || out.More {
		t.Fatalf("prune: %+v, want the day dropped, its %d events counted and no key deleted", out, len(ids))
	}
	if sliceExists(t, pool, slice) {
		t.Fatalf("%s still exists after prune", slice)
	}
	var state string
	var events, minID, maxID int64
	if err := pool.QueryRow(ctx, `SELECT state, events, min_id, max_id FROM webhooks.history_days WHERE day = $1::date`, day).
		Scan(&state, &events, &minID, &maxID); err != nil {
		t.Fatalf("history_days of %s: %v", day, err)
	}
	if state != "dropped" || events != int64(len(ids)) || minID > signedID || maxID < ids[len(ids)-1] {
		t.Fatalf("history_days %s: %s, %d events, ids %d..%d; want dropped, %d events, ids covering %v",
			day, state, events, minID, maxID, len(ids), ids)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = ANY ($1)`, ids); n != 0 {
		t.Fatalf("%d events of the dropped day still readable", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys WHERE event_id = ANY ($1)`, ids); n != int64(len(ids)) {
		t.Fatalf("%d keys left of %d after dropping their day", n, len(ids))
	}

	// Every key is still a duplicate of its first event.
	duplicates := []struct {
		name   string
		wantID int64
		call   func() (int64, string)
	}{
		{"signed key, other payload", signedID, func() (int64, string) {
			return ingest(t, pool, "sume", "ret_signed", "job.completed", `{"job_id": "ret_signed", "v": 2}`)
		}},
		{"signed key, now with a digest", signedID, func() (int64, string) {
			return mustIngestDigest(t, pool, "sume", "ret_signed", `{"job_id": "ret_signed", "v": 3}`)
		}},
		{"digest key", digestID, func() (int64, string) {
			return mustIngestDigest(t, pool, "sume", "ret_digest", `{"job_id": "ret_digest"}`)
		}},
		{"digest body under a new key", digestID, func() (int64, string) {
			return mustIngestDigest(t, pool, "sume", "ret_digest_again", `{"job_id": "ret_digest"}`)
		}},
		{"ingest_signed stripe", stripeID, func() (int64, string) {
			return ingestSignedAs(t, pool, "st", "stripe", secret, "", stripeBody)
		}},
		{"ingest_signed github", githubID, func() (int64, string) {
			return ingestSignedAs(t, pool, "gh", "github", secret, "gh-ret-1", githubBody)
		}},
		{"ingest_signed github, new delivery id", githubID, func() (int64, string) {
			return ingestSignedAs(t, pool, "gh", "github", secret, "gh-ret-2", githubBody)
		}},
	}
	for _, d := range duplicates {
		if id, outcome := d.call(); outcome != "duplicate" || id != d.wantID {
			t.Errorf("%s after its day was dropped: (%d, %s), want (%d, duplicate)", d.name, id, outcome, d.wantID)
		}
	}

	// A replay is refused, naming the day.
	for _, id := range []int64{signedID, githubID} {
		_, err := pool.Exec(ctx, `SELECT webhooks.replay($1::bigint, 'retention test')`, id)
		wantPgError(t, err, "55000", "dropped its day ("+day+")")
	}

	// Recovery counts the key as arrived; a key that never came is a gap.
	execSQL(t, pool, `SELECT webhooks.tombstone('sume', 'ret_signed', 'provider says 404')`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.tombstones WHERE external_id = 'ret_signed'`); n != 0 {
		t.Error("tombstone() recorded a tombstone for a key whose day was dropped")
	}
	execSQL(t, pool, `SELECT webhooks.expect('sume', 'ret_signed', now() - interval '1 minute')`)
	execSQL(t, pool, `SELECT webhooks.expect('sume', 'ret_never', now() - interval '1 minute')`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.find_gaps('sume') WHERE external_id = 'ret_signed'`); n != 0 {
		t.Error("find_gaps() lists a key whose day was dropped")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.find_gaps('sume') WHERE external_id = 'ret_never'`); n != 1 {
		t.Error("find_gaps() misses the key that never came: the check above proves nothing")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.find_sequence_gaps('seq', 101, 105)`); n != 1 {
		t.Errorf("find_sequence_gaps('seq', 101, 105) returns %d ids, want only 104", n)
	}
	reconcile(t, pool)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.expectations WHERE met_at IS NOT NULL AND external_id = 'ret_signed'`); n != 1 {
		t.Error("reconcile() did not meet the expectation of a key whose day was dropped")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.expectations WHERE met_at IS NULL AND external_id = 'ret_never'`); n != 1 {
		t.Error("reconcile() met the expectation of the key that never came")
	}

	// keep_keys passes: the keys go, and each key is new again.
	execSQL(t, pool, `UPDATE webhooks.keys SET received_at = now() - interval '500 days' WHERE event_id = ANY ($1)`, ids)
	out, err = pruneCall(ctx, pool, "30 days", "400 days", "")
	if err != nil {
		t.Fatal(err)
	}
	if out.Events != int64(len(ids)) || out.More {
		t.Fatalf("prune after keep_keys: %+v, want %d keys deleted", out, len(ids))
	}
	if id, outcome := ingest(t, pool, "sume", "ret_signed", "job.completed", `{"job_id": "ret_signed"}`); outcome != "created" || id == signedID {
		t.Errorf("signed key after keep_keys: (%d, %s), want created with a new id", id, outcome)
	}
	if id, outcome := mustIngestDigest(t, pool, "sume", "ret_digest", `{"job_id": "ret_digest"}`); outcome != "created" || id == digestID {
		t.Errorf("digest key after keep_keys: (%d, %s), want created with a new id", id, outcome)
	}
	if id, outcome := ingestSignedAs(t, pool, "gh", "github", secret, "gh-ret-1", githubBody); outcome != "created" || id == githubID {
		t.Errorf("ingest_signed github after keep_keys: (%d, %s), want created with a new id", id, outcome)
	}
	execSQL(t, pool, `SELECT webhooks.tombstone('seq', '102', 'provider says 404')`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.tombstones WHERE provider = 'seq' AND external_id = '102'`); n != 1 {
		t.Error("tombstone() of a key deleted after keep_keys wrote nothing: it still counts the key as arrived")
	}
}

// TestRetentionMissingDaySlice: an event whose day has no slice of
// webhooks.history still lands there: imported 3 years back through the
// view's INSTEAD OF insert, received 30 days ahead (a skewed clock), or
// processed and then found 10 days old; move_history() creates the slice on
// demand. An event of a day prune() dropped is deleted by move_history()
// instead (the slice is not created again), and its key stays a duplicate.
func TestRetentionMissingDaySlice(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()

	insertProcessed := func(key, at string) int64 {
		t.Helper()
		var id int64
		if err := pool.QueryRow(ctx, `
			INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, processed_at, received_at)
			VALUES ('imp', $1, 'thing.happened', '{}', 'processed', now(), `+at+`) RETURNING id`, key).Scan(&id); err != nil {
			t.Fatalf("insert %s through the view: %v", key, err)
		}
		return id
	}
	oldID := insertProcessed("imp_3y", `now() - interval '3 years'`)
	aheadID := insertProcessed("imp_ahead", `now() + interval '30 days'`)
	lateID, _ := ingest(t, pool, "imp", "imp_late", "thing.happened", `{}`)
	processAll(t, pool, "w")
	backdateQueued(t, pool, "10 days", []int64{lateID})

	ids := []int64{oldID, aheadID, lateID}
	slices := make([]string, len(ids))
	for i, id := range ids {
		slices[i], _ = sliceName(t, pool, id)
		if sliceExists(t, pool, slices[i]) {
			t.Fatalf("%s exists before the test: it would not show a slice made on demand", slices[i])
		}
	}
	if got := moveAll(t, pool); got.Moved != 3 || got.Deleted != 0 {
		t.Fatalf("move_history: %+v, want 3 moved", got)
	}
	for i, id := range ids {
		if !sliceExists(t, pool, slices[i]) {
			t.Fatalf("no %s after moving event %d", slices[i], id)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.`+slices[i]+` WHERE id = $1`, id); n != 1 {
			t.Errorf("event %d is not in %s", id, slices[i])
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.history_days
			WHERE 'history_' || to_char(day, 'YYYYMMDD') = $1 AND state = 'live'`, slices[i]); n != 1 {
			t.Errorf("history_days has no live row for %s", slices[i])
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.inbox`); n != 0 {
		t.Errorf("%d events left in the queue", n)
	}

	// The 3-year-old day goes again with the next prune.
	if _, err := pruneCall(ctx, pool, "30 days", "4000 days", ""); err != nil {
		t.Fatal(err)
	}
	if sliceExists(t, pool, slices[0]) {
		t.Errorf("%s, made on demand 3 years back, survived prune", slices[0])
	}

	// A day already dropped: the event is deleted, its key kept.
	seedHistoryDays(t, pool, 50, 50, 2)
	droppedSlice := "history_" + time.Now().UTC().AddDate(0, 0, -50).Format("20060102")
	if !sliceExists(t, pool, droppedSlice) {
		t.Skipf("%s not there: the test crossed midnight UTC", droppedSlice)
	}
	if _, err := pruneCall(ctx, pool, "30 days", "4000 days", ""); err != nil {
		t.Fatal(err)
	}
	if sliceExists(t, pool, droppedSlice) {
		t.Fatalf("%s survived prune", droppedSlice)
	}
	goneID := insertProcessed("imp_dropped_day", `(((now() AT TIME ZONE 'UTC')::date - 50) + time '12:00') AT TIME ZONE 'UTC'`)
	if got := moveAll(t, pool); got.Moved != 0 || got.Deleted != 1 {
		t.Fatalf("move_history of an event of a dropped day: %+v, want 1 deleted", got)
	}
	if sliceExists(t, pool, droppedSlice) {
		t.Errorf("move_history created %s again for an event of a dropped day", droppedSlice)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1`, goneID); n != 0 {
		t.Error("the event of the dropped day is still readable")
	}
	if id, outcome := ingest(t, pool, "imp", "imp_dropped_day", "thing.happened", `{"v": 2}`); outcome != "duplicate" || id != goneID {
		t.Errorf("redelivery of the event deleted with its dropped day: (%d, %s), want (%d, duplicate)", id, outcome, goneID)
	}
	t.Run("replay names the dropped day", func(t *testing.T) {
		_, err := pool.Exec(ctx, `SELECT webhooks.replay($1::bigint, 'retention test')`, goneID)
		wantPgError(t, err, "55000", "dropped its day")
	})
}

// TestRetentionReplayAfterDayMadeAgain: a day prune() dropped is made again
// when an import brings an event of that day (webhooks._history_slice, as
// import does), and the next prune drops it again. A replay of an event
// gone with the first drop is still refused with 55000 naming the day,
// not answered "no event with id".
func TestRetentionReplayAfterDayMadeAgain(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	maxSeeded := seedHistoryDays(t, pool, 40, 40, 4)
	if _, err := pruneCall(ctx, pool, "30 days", "400 days", ""); err != nil {
		t.Fatal(err)
	}
	slice, day := sliceName(t, pool, maxSeeded)
	if sliceExists(t, pool, slice) {
		t.Fatalf("%s survived prune", slice)
	}
	// An import of one more event of that day.
	execSQL(t, pool, `SELECT webhooks._history_slice($1::date)`, day)
	var importedID int64
	if err := pool.QueryRow(ctx, `
		WITH e AS (
			INSERT INTO webhooks.history (id, provider, external_id, event_type, status, payload, received_at, processed_at)
			VALUES (nextval('webhooks.events_id_seq'), 'imp', 'imported', 'thing.happened', 'processed', '{}', $1::date + time '12:00', now())
			RETURNING id, provider, external_id, received_at)
		INSERT INTO webhooks.keys (provider, external_id, event_id, received_at)
		SELECT provider, external_id, id, received_at FROM e RETURNING event_id`, day).Scan(&importedID); err != nil {
		t.Fatal(err)
	}
	if _, err := pruneCall(ctx, pool, "30 days", "400 days", ""); err != nil {
		t.Fatal(err)
	}
	if sliceExists(t, pool, slice) {
		t.Fatalf("%s, made again, survived prune", slice)
	}
	for _, id := range []int64{maxSeeded, importedID} {
		_, err := pool.Exec(ctx, `SELECT webhooks.replay($1::bigint, 'retention test')`, id)
		wantPgError(t, err, "55000", "dropped its day ("+day+")")
	}
}
