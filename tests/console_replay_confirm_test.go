package tests

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/runner"
)

// dieAs kills n fresh events of type eventType (see deadEvent).
func dieAs(t *testing.T, pool *pgxpool.Pool, eventType string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		id := deadEvent(t, pool, fmt.Sprintf("%s_%d", eventType, i))
		execSQL(t, pool, `UPDATE webhooks.events SET event_type = $2 WHERE id = $1`, id, eventType)
	}
}

// TestBulkReplayReplaysOnlyWhatWasConfirmed: the operator is shown "Replay
// 3 events"; more events die before the POST; the replay answers 409 and
// replays nothing, over the API ("expect") and the HTML form (which always
// sends expect). A filter that sets no field is refused with 400 both ways.
func TestBulkReplayReplaysOnlyWhatWasConfirmed(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	srv := startServer(t, conf.URL(), runner.Config{AdminToken: testAdminToken}, sumeOnly)
	cookie := login(t, srv.Admin)
	api := func(body string) (int, string) {
		code, _, out := adminDo(t, nil, "POST", srv.Admin+"/api/events/replay", testAdminToken, body, nil)
		return code, out
	}
	form := func(v url.Values) (int, string) {
		code, _, out := adminDo(t, nil, "POST", srv.Admin+"/events/replay", "", v.Encode(), map[string]string{
			"Cookie": cookie, "Origin": srv.Admin, "Content-Type": "application/x-www-form-urlencoded"})
		return code, out
	}
	replays := func() int64 { return queryInt(t, pool, `SELECT count(*) FROM webhooks.replays`) }
	for _, tc := range []struct {
		name string
		send func(eventType string, expect int) (int, string)
	}{
		{"api", func(et string, expect int) (int, string) {
			return api(fmt.Sprintf(`{"filter": {"status": "dead", "event_type": %q}, "expect": %d, "reason": "handler fixed"}`, et, expect))
		}},
		{"form", func(et string, expect int) (int, string) {
			return form(url.Values{"status": {"dead"}, "event_type": {et}, "expect": {fmt.Sprint(expect)}, "reason": {"handler fixed"}})
		}},
	} {
		et := "job.bulk_" + tc.name
		dieAs(t, pool, et, 0, 3) // the operator is shown 3
		dieAs(t, pool, et, 3, 2) // two more die before the POST
		before := replays()
		if code, out := tc.send(et, 3); code != 409 {
			t.Fatalf("%s: replay of 3 confirmed while 5 match: %d %s, want 409", tc.name, code, out)
		}
		if n := replays() - before; n != 0 {
			t.Fatalf("%s: the refused replay recorded %d replays", tc.name, n)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE event_type = $1 AND status = 'dead'`, et); n != 5 {
			t.Fatalf("%s: %d of 5 events still dead after the refused replay", tc.name, n)
		}
		code, out := tc.send(et, 5)
		if want := map[string]int{"api": 200, "form": 303}[tc.name]; code != want {
			t.Fatalf("%s: replay of the 5 confirmed: %d %s, want %d", tc.name, code, out, want)
		}
		if n := replays() - before; n != 5 {
			t.Fatalf("%s: %d replays recorded, want 5", tc.name, n)
		}
		// Out of the next case's way: its deadEvent claims the oldest pending.
		execSQL(t, pool, `UPDATE webhooks.events SET status = 'processed', processed_at = now(), locked_by = NULL, locked_until = NULL WHERE event_type = $1`, et)
	}
	// A filter that sets no field: never "replay everything".
	before := replays()
	for _, body := range []string{`{"filter": {}, "reason": "all"}`, `{"filter": {"payload": {}}, "reason": "all"}`, `{"filter": {}, "expect": 10, "reason": "all"}`} {
		if code, out := api(body); code != 400 || !strings.Contains(out, "sets no field") {
			t.Errorf("api %s: %d %s, want 400", body, code, out)
		}
	}
	if code, out := form(url.Values{"expect": {"10"}, "reason": {"all"}}); code != 400 {
		t.Errorf("form with no filter field: %d %s, want 400", code, out)
	}
	if code, out := form(url.Values{"status": {"dead"}, "reason": {"no count"}}); code != 400 {
		t.Errorf("form without expect: %d %s, want 400", code, out)
	}
	if n := replays() - before; n != 0 {
		t.Fatalf("the refused replays recorded %d replays", n)
	}
}
