// Package alert POSTs the anomaly checks' transitions to an operator's
// receiver (PGINBOX_ALERT_URL): a check that starts to breach (firing) and
// one that clears (resolved). The database decides what is sent: the
// trigger webhooks._queue_alert writes one row per transition into the
// outbox webhooks.alerts in the transaction that records the check result,
// and a [Sender] takes the oldest due row FOR UPDATE SKIP LOCKED, POSTs it
// and marks it sent in the same transaction, so several runners never send
// one transition twice. A failed POST is retried with backoff.
//
// Each POST may be signed the Standard Webhooks way (PGINBOX_ALERT_SECRET),
// and its body may take the form a receiver wants without a relay: pginbox's
// own JSON, a Slack incoming webhook, PagerDuty Events v2 or Alertmanager's
// /api/v2/alerts ([Formats]).
package alert

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/outbound"
)

// Alert is one transition of a check, as the outbox holds it.
type Alert struct {
	// ID is the outbox row; the POST's webhook-id is "pginbox-alert-<ID>",
	// the same on every attempt, so a receiver can drop a repeat.
	ID int64
	// Check and Family name the check.
	Check, Family string
	// Status is "firing" or "resolved".
	Status string
	// Value, MinOK and MaxOK are the result that changed the verdict (nil:
	// no value, an open bound).
	Value, MinOK, MaxOK *float64
	// Description says what the check watches; Remedy what to do.
	Description, Remedy string
	// At is the run of the checks that saw the transition.
	At time.Time
	// Since is, for a resolved alert, when its firing began (zero: unknown).
	Since time.Time
	// Attempts counts the POSTs tried before this one.
	Attempts int
}

// Config configures a [Sender].
type Config struct {
	// URL receives the POSTs (http or https). Empty: no sender.
	URL string
	// Secret, a Standard Webhooks secret (whsec_<base64>), signs each POST;
	// empty: unsigned.
	Secret string
	// Format is the body's form, one of [Formats]; empty: "pginbox".
	Format string
	// RoutingKey is the PagerDuty integration key (Format "pagerduty").
	RoutingKey string
	// Timeout bounds one POST. Default 10s.
	Timeout time.Duration
	// PollEvery is how often the outbox is looked at without a [Sender.Wake].
	// Default 5s.
	PollEvery time.Duration
	// MaxBackoff caps the delay between two attempts. Default 5m.
	MaxBackoff time.Duration
}

// Sender delivers the outbox webhooks.alerts to Config.URL.
type Sender struct {
	pool    *pgxpool.Pool
	cfg     Config
	key     []byte // decoded Secret; nil: unsigned
	client  *http.Client
	metrics *metrics.Set
	log     *slog.Logger
	wake    chan struct{}
	now     func() time.Time
	// skip lists the alerts the URL's first use left out
	// (webhooks.alert_receivers); nil until read.
	skip []int64
}

// New checks cfg (the URL, the secret, the format) and returns its sender.
// Errors name the setting and never repeat the secret.
func New(pool *pgxpool.Pool, cfg Config, m *metrics.Set, log *slog.Logger) (*Sender, error) {
	if err := CheckURL(cfg.URL); err != nil {
		return nil, err
	}
	if cfg.Format == "" {
		cfg.Format = "pginbox"
	}
	if _, ok := formats[cfg.Format]; !ok {
		return nil, fmt.Errorf("alert format %q is not one of %v", cfg.Format, Formats())
	}
	if cfg.Format == "pagerduty" && cfg.RoutingKey == "" {
		return nil, errors.New("alert format pagerduty needs a routing key (PGINBOX_ALERT_ROUTING_KEY)")
	}
	var key []byte
	if cfg.Secret != "" {
		var err error
		if key, err = DecodeSecret(cfg.Secret); err != nil {
			return nil, fmt.Errorf("alert secret: %w", err)
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = 5 * time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Minute
	}
	return &Sender{
		pool: pool, cfg: cfg, key: key, client: outbound.Client(cfg.Timeout), metrics: m, log: log,
		wake: make(chan struct{}, 1), now: time.Now,
	}, nil
}

// Wake asks the sender to look at the outbox now (after a run of the
// checks); wake-ups arriving during a pass coalesce into one more pass.
func (s *Sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run sends due alerts until ctx ends: every PollEvery and on each Wake.
func (s *Sender) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.PollEvery)
	defer t.Stop()
	for {
		if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("alert outbox", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// Flush sends every alert due now, oldest first, one transaction each. It
// returns at the first database error; a receiver's failure is recorded on
// the row, not returned.
func (s *Sender) Flush(ctx context.Context) error {
	for ctx.Err() == nil {
		sent, err := s.sendOne(ctx)
		if err != nil {
			return err
		}
		if !sent {
			break
		}
	}
	return nil
}

// pickDue locks the oldest alert due now whose check has no older alert
// still to send (a check's firing always reaches the receiver before its
// resolved), skipping rows another runner holds. The alerts the URL's first
// use left out ($1, see [Sender.skipped]) are never sent to it: an alert URL
// set for the first time, or changed to a new receiver, gets the checks
// still firing and the transitions from then on, not the backlog queued
// before. An alert not sent within a day of its transition is no longer
// sent either: a receiver down that long gets today's news.
const pickDue = `
SELECT a.id, a.name, a.family, a.status, a.value::float8, a.min_ok::float8, a.max_ok::float8,
       coalesce(a.description, ''), a.at, a.attempts,
       (SELECT max(f.at) FROM webhooks.alerts AS f WHERE f.name = a.name AND f.id < a.id AND f.status = 'firing'),
       coalesce((SELECT c.remedy FROM webhooks.checks AS c WHERE c.name = a.name), '')
FROM webhooks.alerts AS a
WHERE a.sent_at IS NULL AND a.given_up_at IS NULL AND a.next_attempt_at <= now()
  AND a.created_at > now() - interval '1 day' AND a.id <> ALL ($1::bigint[])
  AND NOT EXISTS (SELECT FROM webhooks.alerts AS b
                  WHERE b.name = a.name AND b.id < a.id AND b.sent_at IS NULL AND b.given_up_at IS NULL
                    AND b.created_at > now() - interval '1 day' AND b.id <> ALL ($1::bigint[]))
ORDER BY a.id
LIMIT 1
FOR UPDATE OF a SKIP LOCKED`

// lockFiring locks the state of every check firing, waiting for a run of
// the checks that is changing one to commit: until the first use commits,
// no run can record a transition of these checks (webhooks._queue_alert
// skips a locked state), so a resolved can never be queued between the
// firing re-queued by [recordFirstUse] and its receiver.
const lockFiring = `SELECT s.name FROM webhooks.alert_state AS s WHERE s.firing ORDER BY s.name FOR UPDATE`

// recordFirstUse, one statement and so one snapshot of both the checks'
// state and the outbox (a run of the checks writes both in one
// transaction): the checks still firing (and enabled: a check disabled
// while firing never resolves, and is not announced); the newest firing of
// each, kept when it can still be sent (unsent, not given up, less than a
// day old), otherwise queued again as a new row (sent to an earlier URL,
// given up, older, or pruned with the rows older than 30 days: then built
// from the check's newest result); and every other unsent alert of the last
// day, the backlog, recorded as never to be sent to this URL ($1). An alert
// whose transaction had not committed when the statement began is not in
// the list, whatever its id, and is sent.
const recordFirstUse = `
WITH firing AS (
    SELECT s.name, s.changed_at
    FROM webhooks.alert_state AS s
    JOIN webhooks.checks AS c ON c.name = s.name AND c.enabled
    WHERE s.firing
), newest AS (
    SELECT DISTINCT ON (a.name) a.*
    FROM webhooks.alerts AS a
    JOIN firing AS f ON f.name = a.name
    WHERE a.status = 'firing'
    ORDER BY a.name, a.id DESC
), kept AS (
    SELECT n.id FROM newest AS n
    WHERE n.sent_at IS NULL AND n.given_up_at IS NULL AND n.created_at > now() - interval '1 day'
), requeued AS (
    INSERT INTO webhooks.alerts (name, family, status, value, min_ok, max_ok, description, at)
    SELECT f.name, coalesce(n.family, r.family, c.family), 'firing',
           coalesce(n.value, r.value), coalesce(n.min_ok, r.min_ok), coalesce(n.max_ok, r.max_ok),
           coalesce(n.description, concat_ws(' ', c.description, '(' || r.detail || ')')),
           coalesce(n.at, f.changed_at, r.run_at, now())
    FROM firing AS f
    LEFT JOIN newest AS n ON n.name = f.name
    LEFT JOIN webhooks.checks AS c ON c.name = f.name
    LEFT JOIN LATERAL (SELECT cr.* FROM webhooks.check_results AS cr
                       WHERE cr.name = f.name ORDER BY cr.run_at DESC LIMIT 1) AS r ON true
    WHERE n.id IS NULL OR n.id NOT IN (SELECT k.id FROM kept AS k)
    RETURNING id
), backlog AS (
    SELECT coalesce(array_agg(a.id ORDER BY a.id), '{}') AS ids
    FROM webhooks.alerts AS a
    WHERE a.sent_at IS NULL AND a.given_up_at IS NULL AND a.created_at > now() - interval '1 day'
      AND a.id NOT IN (SELECT k.id FROM kept AS k)
)
UPDATE webhooks.alert_receivers AS r
SET skipped_alert_ids = b.ids
FROM backlog AS b
WHERE r.url_sha256 = $1
RETURNING cardinality(r.skipped_alert_ids), (SELECT count(*) FROM kept) + (SELECT count(*) FROM requeued)`

// skipped returns the alerts never to be sent to the sender's URL: none
// but the backlog its first use found. The first runner to use the URL
// records it (as its SHA-256 only) in the transaction that lists the
// backlog and queues again the checks still firing, so a receiver hears of
// every breach on when it was set up, and a restarted runner reads the same
// list.
func (s *Sender) skipped(ctx context.Context) ([]int64, error) {
	if s.skip != nil {
		return s.skip, nil
	}
	sum := sha256.Sum256([]byte(s.cfg.URL))
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin the alert URL's first use: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit: a no-op
	// A runner recording the same URL at the same moment waits here for
	// this transaction, then inserts nothing and reads the list below.
	tag, err := tx.Exec(ctx, `INSERT INTO webhooks.alert_receivers (url_sha256) VALUES ($1)
		ON CONFLICT (url_sha256) DO NOTHING`, sum[:])
	if err != nil {
		return nil, fmt.Errorf("record the alert URL's first use: %w", err)
	}
	if tag.RowsAffected() == 1 {
		if _, err := tx.Exec(ctx, lockFiring); err != nil {
			return nil, fmt.Errorf("lock the state of the checks firing: %w", err)
		}
		var backlog, firing int64
		if err := tx.QueryRow(ctx, recordFirstUse, sum[:]).Scan(&backlog, &firing); err != nil {
			return nil, fmt.Errorf("record the alert URL's backlog: %w", err)
		}
		s.log.Info("alert URL used for the first time: the checks still firing and the transitions from now on are sent to it, not the backlog",
			"queued_before_not_sent", backlog, "still_firing", firing)
	}
	skip := []int64{}
	if err := tx.QueryRow(ctx, `SELECT r.skipped_alert_ids FROM webhooks.alert_receivers AS r WHERE r.url_sha256 = $1`,
		sum[:]).Scan(&skip); err != nil {
		return nil, fmt.Errorf("read the alert URL's backlog: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit the alert URL's first use: %w", err)
	}
	s.skip = skip
	return skip, nil
}

// sendOne sends the oldest due alert: false when there is none. The row
// stays locked while its POST runs (bounded by Timeout), so no other runner
// sends it; the outcome is written before the same commit.
func (s *Sender) sendOne(ctx context.Context) (bool, error) {
	skip, err := s.skipped(ctx)
	if err != nil {
		return false, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit: a no-op
	var a Alert
	var since *time.Time
	err = tx.QueryRow(ctx, pickDue, skip).Scan(&a.ID, &a.Check, &a.Family, &a.Status, &a.Value, &a.MinOK, &a.MaxOK,
		&a.Description, &a.At, &a.Attempts, &since, &a.Remedy)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("pick an alert: %w", err)
	}
	if since != nil {
		a.Since = *since
	}
	res := s.post(ctx, a)
	switch res.outcome {
	case delivered:
		_, err = tx.Exec(ctx, `UPDATE webhooks.alerts SET sent_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = $1`, a.ID)
		s.log.Info("alert sent", "check", a.Check, "status", a.Status, "alert_id", a.ID, "attempt", a.Attempts+1)
	case rejected:
		_, err = tx.Exec(ctx, `UPDATE webhooks.alerts SET given_up_at = now(), attempts = attempts + 1, last_error = $2 WHERE id = $1`, a.ID, res.err.Error())
		s.log.Error("alert refused by the receiver; not retried", "check", a.Check, "status", a.Status, "alert_id", a.ID, "error", res.err)
	default:
		delay := s.backoff(a.Attempts+1, res.retryAfter)
		_, err = tx.Exec(ctx, `UPDATE webhooks.alerts SET attempts = attempts + 1, last_error = $2,
			next_attempt_at = clock_timestamp() + make_interval(secs => $3) WHERE id = $1`, a.ID, res.err.Error(), delay.Seconds())
		s.log.Warn("alert not delivered; will retry", "check", a.Check, "status", a.Status, "alert_id", a.ID,
			"attempt", a.Attempts+1, "retry_in", delay.Round(time.Millisecond), "error", res.err)
	}
	if s.metrics != nil {
		s.metrics.AlertPosts.WithLabelValues(res.outcome.String()).Inc()
	}
	if err != nil {
		return false, fmt.Errorf("record alert %d: %w", a.ID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("commit alert %d: %w", a.ID, err)
	}
	// A retry is due later: stop this pass (its turn comes with a later one).
	return res.outcome != retry, nil
}

// backoff is the delay before attempt n+1: 1s doubling per attempt, with
// jitter, capped at MaxBackoff; a receiver's Retry-After is honoured up to
// the same cap.
func (s *Sender) backoff(n int, retryAfter time.Duration) time.Duration {
	d := time.Second << min(n-1, 20)
	d = d/2 + rand.N(d/2+1)
	d = max(d, retryAfter)
	return min(d, s.cfg.MaxBackoff)
}
