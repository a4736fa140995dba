package tests

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/console"
	"github.com/pginbox/pginbox/internal/console/filter"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestConsoleListsReadNewestDays: over ten days of history (2,000 events a
// day), the console's event list reads the day slices newest first and
// stops with the page: the page and the capped counts of an unfiltered list
// read today's slice alone, a provider's one or two; a time window or a
// cursor leaves out the slices outside it; an external_id is found through
// webhooks.keys in the one slice of its day; the statuses other than
// processed read the queue only. (A slice the plan did not reach shows
// "never executed", and is not counted.)
func TestConsoleListsReadNewestDays(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	pgtest.SeedHistoryDays(t, pool, 10, 2000)
	for i := 0; i < 30; i++ {
		ingest(t, pool, "stripe", fmt.Sprintf("pending_%d", i), "invoice.paid", `{}`)
	}
	execSQL(t, pool, `ANALYZE webhooks.inbox`)
	now := dbNow(t, pool)
	today := utcDay(now)
	day := func(ago int) time.Time { return today.AddDate(0, 0, -ago) }
	// An event of eight days ago, for the external_id and cursor cases.
	var old struct {
		ExternalID string
		At         time.Time
		ID         int64
	}
	if err := pool.QueryRow(context.Background(), `SELECT external_id, received_at, id FROM webhooks.history
		WHERE received_at >= $1 AND received_at < $2 AND provider = 'github' ORDER BY id LIMIT 1`, day(8), day(7)).Scan(
		&old.ExternalID, &old.At, &old.ID); err != nil {
		t.Fatal(err)
	}
	// span bounds the days a statement may read, and most is how many
	// slices it may read at most. Slices of days after today (created
	// ahead, empty) come first in a newest-first read and are not counted.
	type span struct {
		from, to time.Time
		most     int
	}
	for _, tc := range []struct {
		name         string
		query        url.Values
		page, counts span
		// seq allows a sequential scan of the slices read (a payload search
		// has no index: its window bounds it).
		seq bool
	}{
		{"everything", url.Values{}, span{today, today, 1}, span{today, today, 1}, false},
		{"processed", url.Values{"status": {"processed"}}, span{today, today, 1}, span{today, today, 1}, false},
		{"a provider", url.Values{"provider": {"github"}}, span{today, today, 1}, span{day(1), today, 2}, false},
		{"a window", url.Values{"since": {day(4).Format(time.RFC3339)}, "until": {day(2).Format(time.RFC3339)}},
			span{day(3), day(3), 1}, span{day(3), day(3), 1}, false},
		// The cursor moves the page, not the counts.
		{"a cursor", url.Values{"cursor": {filter.EncodeCursor(old.At, old.ID)}}, span{day(9), day(8), 2}, span{today, today, 1}, false},
		{"an external_id", url.Values{"external_id": {old.ExternalID}}, span{day(8), day(8), 1}, span{day(8), day(8), 1}, false},
		{"an external_id and its provider", url.Values{"external_id": {old.ExternalID}, "provider": {"github"}},
			span{day(8), day(8), 1}, span{day(8), day(8), 1}, false},
		{"a payload", url.Values{"payload": {`{"n": 7}`}}, span{day(1), today, 2}, span{day(1), today, 2}, true},
		{"pending", url.Values{"status": {"pending"}}, span{today, today, 0}, span{today, today, 0}, false},
		{"dead", url.Values{"status": {"dead"}}, span{today, today, 0}, span{today, today, 0}, false},
	} {
		qs, err := console.ListSQL(tc.query)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, q := range qs {
			want := []span{tc.page, tc.counts}[i]
			days, seq := pgtest.HistoryReads(t, explainJSON(t, pool, q.SQL, q.Args...))
			var bad []string
			past := 0
			for d := range days {
				if d.After(today) {
					continue
				}
				past++
				if d.Before(want.from) || d.After(want.to) {
					bad = append(bad, d.Format("2006-01-02"))
				}
			}
			for _, r := range seq {
				if d, ok := strings.CutPrefix(r, "history_"); ok && !tc.seq && d <= today.Format("20060102") {
					bad = append(bad, "a sequential scan of "+r)
				}
			}
			if len(bad) > 0 || past > want.most {
				t.Errorf("%s, %s: reads the slices of %s (%s), want at most %d from %s to %s:\n%s", tc.name, q.Name, dayList(days),
					strings.Join(bad, ", "), want.most, want.from.Format("2006-01-02"), want.to.Format("2006-01-02"), planText(t, pool, q.SQL, q.Args...))
			}
		}
	}
	// The external_id search still finds the event.
	qs, _ := console.ListSQL(url.Values{"external_id": {old.ExternalID}})
	if n := queryInt(t, pool, `SELECT count(*) FROM (`+qs[0].SQL+`) AS p WHERE p.id = $2`, append(qs[0].Args, old.ID)...); n != 1 {
		t.Fatalf("the external_id %s: %d rows of event %d, want 1", old.ExternalID, n, old.ID)
	}
}

// TestConsoleReadersReadTheirWindow: the overview's sections read the
// queue alone (dead events, counts per provider, retrying events, the head
// of a sequence: a literal status other than processed leaves history out),
// and the last day's backfills the slices of that day; an event's detail
// reads the queue first, one primary-key probe, and only for an event no
// longer there history, one probe of the id index of each day slice (a
// cold path: nothing tells an id's day).
func TestConsoleReadersReadTheirWindow(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	pgtest.SeedHistoryDays(t, pool, 10, 1000)
	id, _ := ingest(t, pool, "stripe", "pending_1", "invoice.paid", `{}`)
	execSQL(t, pool, `ANALYZE webhooks.inbox`)
	now := dbNow(t, pool)
	for _, q := range console.ReaderSQL(id, "stripe", "cus_1") {
		days, seq := pgtest.HistoryReads(t, explainJSON(t, pool, q.SQL, q.Args...))
		switch q.Name {
		case "backfills":
			requireWindow(t, q.Name, days, now.Add(-24*time.Hour), now, true)
		case "detail_history":
			for _, r := range seq {
				if d, ok := strings.CutPrefix(r, "history_"); ok && d <= utcDay(now).Format("20060102") {
					t.Errorf("%s reads %s sequentially", q.Name, r)
				}
			}
		default:
			if len(days) > 0 {
				t.Errorf("%s reads history (%s), want the queue alone", q.Name, dayList(days))
			}
		}
		if t.Failed() {
			t.Fatalf("%s:\n%s", q.Name, planText(t, pool, q.SQL, q.Args...))
		}
	}
}
