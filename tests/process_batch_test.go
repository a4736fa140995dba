package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

const batchHandlerSQL = `
	CREATE SCHEMA app;
	CREATE TABLE app.seen (event_id bigint NOT NULL, external_id text NOT NULL);
	CREATE FUNCTION app.h(e webhooks.events) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
	    INSERT INTO app.seen VALUES (e.id, e.external_id); -- rolled back unless the event completes
	    IF e.payload ? 'fail' THEN
	        RAISE EXCEPTION 'boom %', e.external_id;
	    END IF;
	    IF e.payload ? 'steal' THEN -- the lease is lost while the handler runs
	        UPDATE webhooks.events SET locked_by = 'thief' WHERE id = e.id;
	    END IF;
	END $$;
	CREATE FUNCTION app.not_a_handler(x text) RETURNS void LANGUAGE sql AS 'SELECT';`

// TestProcessBatch: one statement runs a claimed batch. Each event's handler
// and complete() commit together or not at all: a raising handler fails its
// event alone (pending with backoff, or dead at max_attempts) and its writes
// vanish; a lease lost while the handler runs rolls its writes back; an
// event whose lease was lost before the call is not run.
func TestProcessBatch(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	execSQL(t, pool, batchHandlerSQL)
	for _, e := range []struct{ key, payload string }{
		{"ok1", `{}`}, {"fails", `{"fail": 1}`}, {"dies", `{"fail": 1}`}, {"stolen", `{"steal": 1}`}, {"gone", `{}`}, {"ok2", `{}`},
	} {
		ingest(t, pool, "p", e.key, "t", e.payload)
	}
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1 WHERE external_id = 'dies'`)
	c := claim(t, pool, "w", 10, "5 minutes")
	if len(c) != 6 {
		t.Fatalf("claimed %d", len(c))
	}
	// "gone" is taken over by another worker before the batch runs.
	execSQL(t, pool, `UPDATE webhooks.events SET locked_by = 'other' WHERE external_id = 'gone'`)
	ids, attempts := fences(c)
	rows, err := pool.Query(ctx, `SELECT e.external_id, b.outcome, coalesce(b.error, ''), b.handler_ms >= 0
		FROM webhooks.process_batch('app.h(webhooks.events)', 'w', $1, $2) AS b
		JOIN webhooks.events AS e ON e.id = b.event_id`, ids, attempts)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Key, Outcome, Error string
		Timed               bool
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[result])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ok1": "processed", "fails": "pending", "dies": "dead", "stolen": "lost", "ok2": "processed"}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want one per event still leased (%d)", got, len(want))
	}
	for _, r := range got {
		if want[r.Key] != r.Outcome || !r.Timed {
			t.Errorf("%s: %+v, want outcome %q", r.Key, r, want[r.Key])
		}
		if isFail := r.Key == "fails" || r.Key == "dies"; isFail != strings.Contains(r.Error, "sql handler app.h: ERROR: boom "+r.Key) {
			t.Errorf("%s: error %q", r.Key, r.Error)
		}
	}
	// The database agrees, and only completed events kept their writes.
	for key, status := range map[string]string{"ok1": "processed", "ok2": "processed", "fails": "pending", "dies": "dead", "stolen": "processing", "gone": "processing"} {
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = $1 AND status = $2`, key, status); n != 1 {
			t.Errorf("%s: not %s", key, status)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'stolen' AND locked_by = 'w'`); n != 1 {
		t.Error("the handler's own write to the lease was not rolled back with it")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'fails' AND last_error LIKE 'sql handler app.h: ERROR: boom fails%'`); n != 1 {
		t.Error("fail() did not record the handler's error")
	}
	var seen []string
	rows, err = pool.Query(ctx, `SELECT external_id FROM app.seen ORDER BY external_id`)
	if err == nil {
		seen, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "ok1,ok2" {
		t.Fatalf("side table %v, want exactly the completed events [ok1 ok2]", seen)
	}
}

// TestProcessBatchBadInput: each wrong argument is refused with a clear
// error and changes nothing.
func TestProcessBatchBadInput(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	execSQL(t, pool, batchHandlerSQL)
	ingest(t, pool, "p", "e1", "t", `{}`)
	c := claim(t, pool, "w", 1, "5 minutes")
	cases := []struct {
		name, sql, code, msg string
		args                 []any
	}{
		{"handler with the wrong argument", `SELECT * FROM webhooks.process_batch('app.not_a_handler(text)', 'w', $1, $2)`, "22023", "must be a function taking one webhooks.events", []any{[]int64{c[0].ID}, []int32{c[0].Attempts}}},
		{"no such handler", `SELECT * FROM webhooks.process_batch('app.nope(webhooks.events)', 'w', $1, $2)`, "42883", "app.nope", []any{[]int64{c[0].ID}, []int32{c[0].Attempts}}},
		{"NULL ids", `SELECT * FROM webhooks.process_batch('app.h(webhooks.events)', 'w', NULL, $1)`, "22004", "must not be NULL", []any{[]int32{1}}},
		{"NULL worker", `SELECT * FROM webhooks.process_batch('app.h(webhooks.events)', NULL, $1, $2)`, "22004", "must not be NULL", []any{[]int64{c[0].ID}, []int32{c[0].Attempts}}},
		{"arrays of different lengths", `SELECT * FROM webhooks.process_batch('app.h(webhooks.events)', 'w', $1, $2)`, "22023", "event_ids has 1 elements but attempts has 2", []any{[]int64{c[0].ID}, []int32{1, 2}}},
		{"too many events", `SELECT * FROM webhooks.process_batch('app.h(webhooks.events)', 'w', array_fill(1::bigint, ARRAY[10001]), array_fill(1, ARRAY[10001]))`, "22023", "at most 10000", nil},
	}
	for _, tc := range cases {
		_, err := pool.Exec(context.Background(), tc.sql, tc.args...)
		t.Run(tc.name, func(t *testing.T) { wantPgError(t, err, tc.code, tc.msg) })
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processing' AND locked_by = 'w'`); n != 1 {
		t.Fatal("a refused call changed the event")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.seen`); n != 0 {
		t.Fatal("a refused call ran the handler")
	}
}

// TestProcessBatchAsWorkerRole: a role with grant_worker (and rights on its
// own handler's tables only) runs a batch without any privilege on
// webhooks.events; the handler runs with that role's rights, not the
// owner's.
func TestProcessBatchAsWorkerRole(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	owner := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	execSQL(t, owner, batchHandlerSQL)
	execSQL(t, owner, `CREATE FUNCTION app.who(e webhooks.events) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO app.seen VALUES (e.id, current_user); END $$`)
	ingest(t, owner, "p", "e1", "t", `{}`)
	ingest(t, owner, "p", "e2", "t", `{}`)
	role := "pginbox_batch_" + strings.ReplaceAll(conf.Database[len(conf.Database)-8:], "-", "")
	c := roleConn(t, conf.URL(), role, "grant_worker")
	execSQL(t, owner, `GRANT USAGE ON SCHEMA app TO `+role+`; GRANT INSERT ON app.seen TO `+role)

	var id int64
	var attempt int32
	if err := c.QueryRow(ctx, `SELECT id, attempts FROM webhooks.claim('w', 1)`).Scan(&id, &attempt); err != nil {
		t.Fatal(err)
	}
	var outcome string
	if err := c.QueryRow(ctx, `SELECT outcome FROM webhooks.process_batch('app.who(webhooks.events)', 'w', $1, $2)`,
		[]int64{id}, []int32{attempt}).Scan(&outcome); err != nil {
		t.Fatal(err)
	}
	if outcome != "processed" {
		t.Fatalf("outcome %q", outcome)
	}
	var ranAs string
	if err := owner.QueryRow(ctx, `SELECT external_id FROM app.seen WHERE event_id = $1`, id).Scan(&ranAs); err != nil {
		t.Fatal(err)
	}
	if ranAs != role {
		t.Fatalf("the handler ran as %q, want the caller %q", ranAs, role)
	}
	// Its rights are the caller's: without INSERT on the side table, the
	// handler fails and the event is retried, rather than running as owner.
	execSQL(t, owner, `REVOKE INSERT ON app.seen FROM `+role)
	if err := c.QueryRow(ctx, `SELECT id, attempts FROM webhooks.claim('w', 1)`).Scan(&id, &attempt); err != nil {
		t.Fatal(err)
	}
	var errText string
	if err := c.QueryRow(ctx, `SELECT outcome, error FROM webhooks.process_batch('app.who(webhooks.events)', 'w', $1, $2)`,
		[]int64{id}, []int32{attempt}).Scan(&outcome, &errText); err != nil {
		t.Fatal(err)
	}
	if outcome != "pending" || !strings.Contains(errText, "42501") {
		t.Fatalf("without the handler's rights: %q %q, want pending with permission denied (42501)", outcome, errText)
	}
	if _, err := c.Exec(ctx, `SELECT count(*) FROM webhooks.events`); err == nil || !strings.Contains(err.Error(), "42501") {
		t.Fatalf("a worker read webhooks.events directly: %v", err)
	}
}
