package tests

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// TestAlertsNoBacklogBeforeFirstUse: transitions queued before an alert URL
// was first used are not POSTed to it, even those of the last minute (here
// a firing and resolved pair for a breach already over, and a firing still
// on), only the transitions after; the first use is recorded in the
// database (as the URL's SHA-256, never the URL), so a restarted runner
// still sends what was queued while it was down.
func TestAlertsNoBacklogBeforeFirstUse(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	// The backlog: what the checks queued in the last minute, while no
	// alert URL was set.
	execSQL(t, pool, `INSERT INTO webhooks.alerts (name, family, status, at, created_at, next_attempt_at) VALUES
		('gaps_recent', 'gaps', 'firing', now() - interval '60 s', now() - interval '60 s', now() - interval '60 s'),
		('gaps_recent', 'gaps', 'resolved', now() - interval '45 s', now() - interval '45 s', now() - interval '45 s'),
		('dead_events_24h', 'referential', 'firing', now() - interval '30 s', now() - interval '30 s', now() - interval '30 s'),
		('dead_events_24h', 'referential', 'resolved', now() - interval '20 s', now() - interval '20 s', now() - interval '20 s'),
		('providers_silent', 'volume', 'firing', now() - interval '10 s', now() - interval '10 s', now() - interval '10 s')`)
	backlogMax := queryInt(t, pool, `SELECT max(id) FROM webhooks.alerts`)
	rcv := newAlertReceiver(t, nil)
	// The first run is `pginbox serve` itself, for its log.
	proc := startRunner(t, map[string]string{
		"DATABASE_URL": conf.URL(), "PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": sumeSecret,
		"PGINBOX_CHECKS_EVERY": "300ms", "PGINBOX_RECONCILE_EVERY": "1h", "PGINBOX_ALERT_URL": rcv.URL,
	})
	// A transition after the first use: a dead event makes dead_events_24h fire.
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload, status, last_error, attempts)
		VALUES ('sume', 'dead-1', 't', '{}', 'dead', 'boom', 1)`)
	waitFor(t, 30*time.Second, "the firing alert of the new breach", func() bool {
		_, d := rcv.got("dead_events_24h", "firing")
		return len(d) == 1
	})
	if err := proc.Terminate(10 * time.Second); err != nil {
		t.Fatalf("serve: %v\n%s", err, proc.Logs())
	}
	logged := false
	for _, line := range strings.Split(proc.Logs(), "\n") {
		logged = logged || strings.Contains(line, `"msg":"alert URL used for the first time: only transitions from now on are sent to it"`) &&
			strings.Contains(line, `"queued_before_not_sent":5`)
	}
	if !logged {
		t.Fatalf("serve did not log the alert URL's first use with the 5 alerts left unsent:\n%s", proc.Logs())
	}
	// Nothing of the backlog left: not POSTed, not even tried.
	checkBacklog := func(when string) {
		t.Helper()
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.alerts WHERE id <= $1 AND (sent_at IS NOT NULL OR attempts > 0)`, backlogMax); n != 0 {
			t.Fatalf("%s: %d alerts queued before the alert URL was first used were POSTed", when, n)
		}
		for _, c := range []string{"gaps_recent", "providers_silent"} {
			if all, _ := rcv.got(c, "firing"); len(all) != 0 {
				t.Fatalf("%s: %d firing POSTs for %s, queued before the alert URL was first used", when, len(all), c)
			}
		}
		if all, _ := rcv.got("gaps_recent", "resolved"); len(all) != 0 {
			t.Fatalf("%s: the resolved of a breach over before the alert URL was first used was POSTed", when)
		}
	}
	checkBacklog("first run")
	if all, _ := rcv.got("dead_events_24h", "firing"); len(all) != 1 {
		t.Fatalf("%d firing POSTs for dead_events_24h, want 1 (the new breach only)", len(all))
	}
	if all, _ := rcv.got("dead_events_24h", "resolved"); len(all) != 0 {
		t.Fatalf("%d resolved POSTs for dead_events_24h while it fires, want 0 (the backlog's was sent)", len(all))
	}
	sum := sha256.Sum256([]byte(rcv.URL))
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.alert_receivers WHERE url_sha256 = $1 AND first_used_at <= now()`, sum[:]); n != 1 {
		t.Fatalf("webhooks.alert_receivers holds %d rows for the URL's SHA-256, want 1", n)
	}
	// While no runner runs, the breach ends: its resolved is queued after
	// the URL's first use, and a runner started again sends it.
	execSQL(t, pool, `DELETE FROM webhooks.events WHERE external_id = 'dead-1'`)
	execSQL(t, pool, `INSERT INTO webhooks.alerts (name, family, status, at) VALUES ('dead_events_24h', 'referential', 'resolved', now())`)
	startServer(t, conf.URL(), runner.Config{ChecksEvery: 300 * time.Millisecond, ReconcileEvery: time.Hour, AlertURL: rcv.URL}, sumeOnly)
	waitFor(t, 30*time.Second, "the resolved alert queued while no runner ran", func() bool {
		_, d := rcv.got("dead_events_24h", "resolved")
		return len(d) >= 1
	})
	checkBacklog("after a restart")
}
