package tests

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestKillDuringPrune: the server is killed with SIGKILL while prune() is
// detaching and dropping days of webhooks.history, twice: in a single call
// that has detached and dropped 31 days and tries for the lock of the next
// (held by a reader), and in the runner's calls of 5 days each, some of
// them committed. After each restart no slice is left half-detached or
// detached but not dropped, webhooks.history_days matches the slices, every
// key is there, and every event is in a live slice or counted in a dropped
// day; a last prune() then drops every due day.
func TestKillDuringPrune(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	ctx := context.Background()
	c, url := ownCluster(t, nil, true)
	const fromAgo, toAgo, perDay = 2, 41, 1000
	seedPool := PoolFor(t, url, 2)
	maxSeeded := seedHistoryDays(t, seedPool, fromAgo, toAgo, perDay)
	seeded := queryInt(t, seedPool, `SELECT count(*) FROM webhooks.keys WHERE event_id <= $1`, maxSeeded)
	seedPool.Close()

	for _, tc := range []struct {
		name string
		args string // prune's arguments after its intervals
		held int    // days ago of a slice a reader holds, 0 for none
	}{
		{"one call, waiting for a slice", ``, 10},
		{"the runner's calls", `, batch_size => 1000, max_rows => 5000`, 0},
	} {
		pool := PoolFor(t, url, 4)
		droppedBefore := queryInt(t, pool, `SELECT count(*) FROM webhooks.history_days WHERE state = 'dropped'`)
		if tc.held > 0 {
			holder := connect(t, url)
			for _, q := range []string{`BEGIN`, `LOCK TABLE webhooks.history_` +
				time.Now().UTC().AddDate(0, 0, -tc.held).Format("20060102") + ` IN ACCESS SHARE MODE`} {
				if _, err := holder.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %s: %v", tc.name, q, err)
				}
			}
		}
		pruner := connect(t, url)
		pid := pruner.PgConn().PID()
		done := make(chan error, 1)
		go func() {
			for {
				out, err := pruneCall(ctx, pruner, "1 day", "400 days", tc.args)
				if err != nil || !out.More || tc.held > 0 {
					done <- err
					return
				}
			}
		}()
		// Kill once prune holds the locks of several detached slices in
		// its open transaction (and, for the runner's calls, after a call
		// committed): mid-prune. With a slice held, the one call holds
		// the 31 days older than it for the 1.5 s it tries that slice's
		// lock before it gives up (busy).
		var locked int64
		deadline := time.Now().Add(60 * time.Second)
		for {
			select {
			case err := <-done:
				t.Fatalf("%s: prune finished (%v) before the kill: the test killed nothing", tc.name, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: prune never held the locks of the slices it detached within 60 s", tc.name)
			}
			locked = queryInt(t, pool, `
				SELECT count(*) FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation
				WHERE l.pid = $1 AND l.mode = 'AccessExclusiveLock' AND l.granted AND c.relname ~ '^history_[0-9]{8}$'`, pid)
			committed := queryInt(t, pool, `SELECT count(*) FROM webhooks.history_days WHERE state = 'dropped'`) - droppedBefore
			if (tc.held > 0 && locked >= int64(toAgo-tc.held)) ||
				(tc.held == 0 && locked >= 3 && committed >= 5) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := c.Kill(); err != nil {
			t.Fatalf("%s: kill: %v", tc.name, err)
		}
		if err := <-done; err == nil {
			t.Fatalf("%s: prune returned without an error from a killed server", tc.name)
		}
		if err := c.Restart(ctx); err != nil {
			t.Fatalf("%s: restart: %v", tc.name, err)
		}
		pool = PoolFor(t, url, 4)
		dropped := queryInt(t, pool, `SELECT count(*) FROM webhooks.history_days WHERE state = 'dropped'`) - droppedBefore
		t.Logf("%s: killed with %d slices detached in the open call, %d days dropped by committed calls", tc.name, locked, dropped)
		if tc.held > 0 && dropped != 0 {
			t.Errorf("%s: %d days dropped by a call that never committed", tc.name, dropped)
		}
		if bad := retentionInvariants(t, pool, maxSeeded, seeded); bad != "" {
			t.Fatalf("%s: after the restart: %s", tc.name, bad)
		}
	}

	pool := PoolFor(t, url, 4)
	pruneUntilDone(t, pool, "1 day", "400 days")
	if bad := retentionInvariants(t, pool, maxSeeded, seeded); bad != "" {
		t.Fatalf("after the last prune: %s", bad)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.history_days
		WHERE day <= (now() AT TIME ZONE 'UTC')::date - $1::int AND state <> 'dropped'`, fromAgo); n != 0 {
		t.Errorf("%d seeded days not dropped by the last prune", n)
	}
	if id, outcome := ingest(t, pool, "sp", "k20_2", "thing.happened", `{}`); outcome != "duplicate" || id > maxSeeded {
		t.Errorf("a key of a dropped day after the kills: (%d, %s), want its first id, duplicate", id, outcome)
	}
}

// retentionInvariants checks what a crash must never leave behind: a slice
// half-detached (DETACH ... CONCURRENTLY interrupted) or detached but not
// dropped, webhooks.history_days out of step with the slices, a key lost
// (of the seeded events, ids up to maxSeeded, seeded keys), or an event
// neither in a live slice nor counted in a dropped day. It returns what is
// wrong, or "".
func retentionInvariants(t *testing.T, pool *pgxpool.Pool, maxSeeded, seeded int64) string {
	t.Helper()
	var bad []string
	for _, c := range []struct{ what, sql string }{
		{"slices half-detached", `SELECT count(*) FROM pg_inherits WHERE inhdetachpending`},
		{"day tables not attached to webhooks.history", `
			SELECT count(*) FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
			WHERE n.nspname = 'webhooks' AND c.relkind = 'r' AND c.relname ~ '^history_[0-9]{8}$'
			  AND NOT EXISTS (SELECT FROM pg_inherits AS i
			                  WHERE i.inhrelid = c.oid AND i.inhparent = 'webhooks.history'::regclass)`},
		{"live days without their slice", `
			SELECT count(*) FROM webhooks.history_days AS d
			WHERE d.state = 'live' AND to_regclass('webhooks.history_' || to_char(d.day, 'YYYYMMDD')) IS NULL`},
		{"dropped days whose slice exists", `
			SELECT count(*) FROM webhooks.history_days AS d
			WHERE d.state = 'dropped' AND to_regclass('webhooks.history_' || to_char(d.day, 'YYYYMMDD')) IS NOT NULL`},
		{"slices without a live day", `
			SELECT count(*) FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'webhooks.history'::regclass
			  AND NOT EXISTS (SELECT FROM webhooks.history_days AS d
			                  WHERE d.state = 'live' AND 'history_' || to_char(d.day, 'YYYYMMDD') = c.relname)`},
	} {
		if n := queryInt(t, pool, c.sql); n != 0 {
			bad = append(bad, c.what+": "+strconv.FormatInt(n, 10))
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.keys WHERE event_id <= $1`, maxSeeded); n != seeded {
		bad = append(bad, "keys of the seeded events: "+strconv.FormatInt(n, 10)+" of "+strconv.FormatInt(seeded, 10))
	}
	if n := queryInt(t, pool, `
		SELECT (SELECT count(*) FROM webhooks.history WHERE id <= $1)
		     + (SELECT coalesce(sum(events), 0) FROM webhooks.history_days WHERE state = 'dropped' AND max_id <= $1)`,
		maxSeeded); n != seeded {
		bad = append(bad, "seeded events live or counted dropped: "+strconv.FormatInt(n, 10)+" of "+strconv.FormatInt(seeded, 10))
	}
	return strings.Join(bad, "; ")
}
