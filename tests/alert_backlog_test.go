package tests

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/alert"
	"github.com/pginbox/pginbox/runner"
)

// TestAlertsNoBacklogBeforeFirstUse: an alert URL used for the first time
// gets the checks still firing, once each as firing, and the transitions
// after, never the backlog queued before (not even that of the last
// minute): here a firing and resolved pair for a breach already over
// (gaps_recent), an older breach of dead_events_24h, which fires again (only
// its newest firing is sent), and providers_silent, firing since before and
// already sent to an earlier URL (queued again for this one). The first use
// is recorded in the database (as the URL's SHA-256, never the URL), so a
// restarted runner neither sends the backlog nor queues the firing again,
// and still sends what was queued while it was down.
func TestAlertsNoBacklogBeforeFirstUse(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	// The backlog: what the checks queued in the last minute, while no
	// alert URL was set (or another one).
	execSQL(t, pool, `INSERT INTO webhooks.alerts (name, family, status, at, created_at, next_attempt_at, sent_at) VALUES
		('gaps_recent', 'gaps', 'firing', now() - interval '60 s', now() - interval '60 s', now() - interval '60 s', NULL),
		('gaps_recent', 'gaps', 'resolved', now() - interval '45 s', now() - interval '45 s', now() - interval '45 s', NULL),
		('dead_events_24h', 'referential', 'firing', now() - interval '40 s', now() - interval '40 s', now() - interval '40 s', NULL),
		('dead_events_24h', 'referential', 'resolved', now() - interval '35 s', now() - interval '35 s', now() - interval '35 s', NULL),
		('providers_silent', 'volume', 'firing', now() - interval '30 s', now() - interval '30 s', now() - interval '30 s', now() - interval '29 s')`)
	// providers_silent fires, as judged on a run the runner's own runs never
	// supersede (run_at infinity): it stays firing whatever they find.
	execSQL(t, pool, `INSERT INTO webhooks.alert_state (name, firing, run_at, changed_at)
		VALUES ('providers_silent', true, 'infinity', now() - interval '30 s')`)
	// dead_events_24h breaches again, for real, before the URL is used.
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, last_error, attempts)
		VALUES ('sume', 'dead-0', 't', '{}', 'dead', 'boom', 1)`)
	execSQL(t, pool, `INSERT INTO webhooks.check_results (run_at, name, family, value, min_ok, max_ok, ok)
		VALUES (now(), 'dead_events_24h', 'referential', 1, NULL, 0, false)`)
	newestFiring := queryInt(t, pool, `SELECT max(id) FROM webhooks.alerts WHERE name = 'dead_events_24h' AND status = 'firing'`)
	backlogMax := queryInt(t, pool, `SELECT max(id) FROM webhooks.alerts`)
	if newestFiring != backlogMax {
		t.Fatalf("the breach of dead_events_24h queued alert %d, want the newest (%d)", newestFiring, backlogMax)
	}
	rcv := newAlertReceiver(t, nil)
	// The first run is `pginbox serve` itself, for its log.
	proc := startRunner(t, map[string]string{
		"DATABASE_URL": conf.URL(), "PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": sumeSecret,
		"PGINBOX_CHECKS_EVERY": "300ms", "PGINBOX_RECONCILE_EVERY": "1h", "PGINBOX_ALERT_URL": rcv.URL,
	})
	waitFor(t, 30*time.Second, "the firing alerts of the checks still firing", func() bool {
		_, d := rcv.got("dead_events_24h", "firing")
		_, p := rcv.got("providers_silent", "firing")
		return len(d) == 1 && len(p) == 1
	})
	// A transition after the first use: the dead event goes, dead_events_24h
	// clears.
	execSQL(t, pool, `DELETE FROM webhooks.events WHERE external_id = 'dead-0'`)
	waitFor(t, 30*time.Second, "the resolved alert of the breach that was firing at first use", func() bool {
		_, d := rcv.got("dead_events_24h", "resolved")
		return len(d) == 1
	})
	if err := proc.Terminate(10 * time.Second); err != nil {
		t.Fatalf("serve: %v\n%s", err, proc.Logs())
	}
	logged := false
	for _, line := range strings.Split(proc.Logs(), "\n") {
		logged = logged || strings.Contains(line, `"msg":"alert URL used for the first time: the checks still firing and the transitions from now on are sent to it, not the backlog"`) &&
			strings.Contains(line, `"queued_before_not_sent":4`)
	}
	if !logged {
		t.Fatalf("serve did not log the alert URL's first use with the 4 alerts of the backlog left unsent:\n%s", proc.Logs())
	}
	// What was sent: the newest firing of dead_events_24h, a firing of
	// providers_silent queued again, then the resolved; nothing else of the
	// backlog, not even tried.
	checkSent := func(when string, deadFirings int) {
		t.Helper()
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.alerts WHERE id <= $1 AND id <> $2 AND name <> 'providers_silent'
			AND (sent_at IS NOT NULL OR attempts > 0)`, backlogMax, newestFiring); n != 0 {
			t.Fatalf("%s: %d alerts of the backlog queued before the alert URL was first used were POSTed", when, n)
		}
		if all, _ := rcv.got("gaps_recent", "firing"); len(all) != 0 {
			t.Fatalf("%s: %d firing POSTs for gaps_recent, over before the alert URL was first used", when, len(all))
		}
		if all, _ := rcv.got("gaps_recent", "resolved"); len(all) != 0 {
			t.Fatalf("%s: the resolved of a breach over before the alert URL was first used was POSTed", when)
		}
		if all, _ := rcv.got("providers_silent", "firing"); len(all) != 1 {
			t.Fatalf("%s: %d firing POSTs for providers_silent, firing at first use; want 1", when, len(all))
		}
		all, _ := rcv.got("dead_events_24h", "firing")
		if len(all) != deadFirings {
			t.Fatalf("%s: %d firing POSTs for dead_events_24h, want %d", when, len(all), deadFirings)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.alerts WHERE id = $1 AND sent_at IS NOT NULL`, newestFiring); n != 1 {
			t.Fatalf("%s: the newest firing of dead_events_24h queued before first use (alert %d) was not the one sent", when, newestFiring)
		}
		if res, _ := rcv.got("dead_events_24h", "resolved"); len(res) != 1 || res[0].At.Before(all[0].At) {
			t.Fatalf("%s: %d resolved POSTs for dead_events_24h, want 1 after its firing", when, len(res))
		}
	}
	checkSent("first run", 1)
	sum := sha256.Sum256([]byte(rcv.URL))
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.alert_receivers WHERE url_sha256 = $1 AND first_used_at <= now()
		AND cardinality(skipped_alert_ids) = 4`, sum[:]); n != 1 {
		t.Fatalf("webhooks.alert_receivers holds %d rows for the URL's SHA-256 with the 4 alerts of the backlog, want 1", n)
	}
	// While no runner runs, dead_events_24h breaches again: its firing is
	// queued after the URL's first use, and a runner started again sends it
	// (and neither the backlog nor providers_silent again).
	execSQL(t, pool, `INSERT INTO webhooks.alerts (name, family, status, at) VALUES ('dead_events_24h', 'referential', 'firing', now())`)
	startServer(t, conf.URL(), runner.Config{ChecksEvery: time.Hour, ReconcileEvery: time.Hour, AlertURL: rcv.URL}, sumeOnly)
	waitFor(t, 30*time.Second, "the firing alert queued while no runner ran", func() bool {
		_, d := rcv.got("dead_events_24h", "firing")
		return len(d) >= 2
	})
	checkSent("after a restart", 2)
}

// TestAlertsCommittedAfterFirstUseSent: a run of the checks that began
// before the alert URL was first used, and commits after, queued a
// transition the URL has not heard of: it is sent, though its created_at
// (the run's start) is older than the first use.
func TestAlertsCommittedAfterFirstUseSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	rcv := newAlertReceiver(t, nil)
	// The run of the checks, on its own connection: dead_events_24h starts
	// to breach; not committed yet.
	run, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Rollback(ctx) //nolint:errcheck // after Commit: a no-op
	if _, err := run.Exec(ctx, `INSERT INTO webhooks.check_results (run_at, name, family, value, min_ok, max_ok, ok)
		VALUES (now(), 'dead_events_24h', 'referential', 1, NULL, 0, false)`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the first use comes strictly later
	// The URL's first use, on another connection, while the run is open.
	s, err := alert.New(pool, alert.Config{URL: rcv.URL}, nil, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("first flush: %v", err)
	}
	if all, _ := rcv.got("dead_events_24h", "firing"); len(all) != 0 {
		t.Fatalf("%d firing POSTs before the run committed", len(all))
	}
	if err := run.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.alerts AS a JOIN webhooks.alert_receivers AS r
		ON a.created_at < r.first_used_at WHERE a.name = 'dead_events_24h'`); n != 1 {
		t.Fatalf("%d alerts of dead_events_24h created before the first use, want 1 (the run began before it)", n)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("second flush: %v", err)
	}
	if _, d := rcv.got("dead_events_24h", "firing"); len(d) != 1 {
		t.Fatalf("%d firing POSTs for the transition committed after the URL's first use, want 1", len(d))
	}
}

// TestAlertsFirstUseWaitsForResolvingRun: a check firing since before (its
// firing sent to an earlier URL) is being resolved by a run of the checks
// not yet committed when the alert URL is first used. The first use waits
// for that run instead of queueing the firing again after the run's
// resolved (which would leave the receiver believing the check fires for
// ever): the breach is over, and the URL hears of neither.
func TestAlertsFirstUseWaitsForResolvingRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	rcv := newAlertReceiver(t, nil)
	execSQL(t, pool, `INSERT INTO webhooks.alerts (name, family, status, at, created_at, next_attempt_at, sent_at)
		VALUES ('dead_events_24h', 'referential', 'firing', now() - interval '1 h', now() - interval '1 h', now() - interval '1 h', now() - interval '1 h')`)
	execSQL(t, pool, `INSERT INTO webhooks.alert_state (name, firing, run_at, changed_at)
		VALUES ('dead_events_24h', true, now() - interval '1 h', now() - interval '1 h')`)
	run, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Rollback(ctx) //nolint:errcheck // after Commit: a no-op
	if _, err := run.Exec(ctx, `INSERT INTO webhooks.check_results (run_at, name, family, value, min_ok, max_ok, ok)
		VALUES (now(), 'dead_events_24h', 'referential', 0, NULL, 0, true)`); err != nil {
		t.Fatal(err)
	}
	s, err := alert.New(pool, alert.Config{URL: rcv.URL}, nil, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Flush(ctx) }()
	// The first use waits on the run's lock on the check's state (were it
	// not to wait, its flush would end first).
	var flushed error
	ended := false
	waitFor(t, 10*time.Second, "the first use to wait for the run's lock on the check's state, or to end", func() bool {
		select {
		case flushed = <-done:
			ended = true
			return true
		default:
		}
		return queryInt(t, pool, `SELECT count(*) FROM pg_catalog.pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	})
	if err := run.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !ended {
		flushed = <-done
	}
	if flushed != nil {
		t.Fatalf("first flush: %v", flushed)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("second flush: %v", err)
	}
	for _, status := range []string{"firing", "resolved"} {
		if all, _ := rcv.got("dead_events_24h", status); len(all) != 0 {
			t.Fatalf("%d %s POSTs for dead_events_24h, resolved as the URL was first used; want none", len(all), status)
		}
	}
}

// TestAlertsFirstUseAnnouncesLongBreach: a check firing for longer than the
// outbox keeps rows (its firing pruned after 30 days) is announced to a new
// alert URL all the same, built from the check's newest result, with the
// time its breach began.
func TestAlertsFirstUseAnnouncesLongBreach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	rcv := newAlertReceiver(t, nil)
	execSQL(t, pool, `INSERT INTO webhooks.alert_state (name, firing, run_at, changed_at)
		VALUES ('dead_events_24h', true, now() - interval '1 min', '2026-01-02T03:04:05Z')`)
	execSQL(t, pool, `ALTER TABLE webhooks.check_results DISABLE TRIGGER check_results_queue_alert`)
	execSQL(t, pool, `INSERT INTO webhooks.check_results (run_at, name, family, value, min_ok, max_ok, ok)
		VALUES (now() - interval '1 min', 'dead_events_24h', 'referential', 7, NULL, 0, false)`)
	execSQL(t, pool, `ALTER TABLE webhooks.check_results ENABLE TRIGGER check_results_queue_alert`)
	s, err := alert.New(pool, alert.Config{URL: rcv.URL}, nil, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	_, d := rcv.got("dead_events_24h", "firing")
	if len(d) != 1 {
		t.Fatalf("%d firing POSTs for dead_events_24h, firing for months at first use; want 1", len(d))
	}
	a := d[0].Alert
	if a.Value == nil || *a.Value != 7 || a.MaxOK == nil || *a.MaxOK != 0 || a.Family != "referential" ||
		!strings.HasPrefix(a.At, "2026-01-02T03:04:05") || a.Description == "" {
		t.Fatalf("the firing POSTed is %+v, want value 7, max_ok 0, family referential, at 2026-01-02T03:04:05, a description", a)
	}
}
