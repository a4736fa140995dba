// Package metrics holds the runner's Prometheus metrics (all named
// pginbox_*) in one [Set] that every part records into — ingest, the
// workers, the notifier and listener, the schedules — and the collectors
// read from the database at scrape time (queue depth, anomaly checks).
package metrics

import (
	"slices"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/pginbox/pginbox/internal/provider/api"
)

// Set is the runner's metrics, registered in Registry.
type Set struct {
	// Registry holds every metric below plus the Go, process, queue,
	// check and ordering collectors; the admin listener serves it at /metrics.
	Registry *prometheus.Registry

	// Deliveries counts verified deliveries stored, by provider and outcome.
	Deliveries *prometheus.CounterVec
	// Rejections counts deliveries answered non-2xx, by provider and reason.
	Rejections *prometheus.CounterVec
	// RequestSeconds times POST /webhooks/{provider}, by provider.
	RequestSeconds *prometheus.HistogramVec
	// IngestSeconds times storing one delivery: waiting for its batch, then
	// the batch's statement and commit.
	IngestSeconds prometheus.Histogram
	// IngestBatchSize counts the deliveries of each ingest batch (group
	// commit: one transaction).
	IngestBatchSize prometheus.Histogram
	// IngestBatchWait times how long a delivery waited for its batch to start.
	IngestBatchWait prometheus.Histogram
	// IngestCommitSeconds times one ingest batch's statement and commit.
	IngestCommitSeconds prometheus.Histogram
	// IngestUnconfirmed counts deliveries answered 503 because their
	// commit was not confirmed, by reason.
	IngestUnconfirmed *prometheus.CounterVec
	// Claimed counts events taken by this runner's workers.
	Claimed prometheus.Counter
	// Completed counts events whose handler succeeded and committed.
	Completed prometheus.Counter
	// Failed counts handler failures by the event's new status (pending|dead).
	Failed *prometheus.CounterVec
	// LostLeases counts completions refused by the fence.
	LostLeases prometheus.Counter
	// Released counts claimed events handed back unstarted.
	Released prometheus.Counter
	// HandlerSeconds times one handler call.
	HandlerSeconds prometheus.Histogram
	// HandlerPanics counts handler panics.
	HandlerPanics prometheus.Counter
	// BatchFallbacks counts batch statements that overran or failed whole.
	BatchFallbacks prometheus.Counter
	// ListenerConnects counts LISTEN connections established.
	ListenerConnects prometheus.Counter
	// Wakeups counts worker wake-ups by source (local|notify|poll|backlog|…).
	Wakeups *prometheus.CounterVec
	// Notifies counts coalesced NOTIFY webhooks_events sent.
	Notifies prometheus.Counter
	// ScheduledRuns counts scheduled job passes by job and result.
	ScheduledRuns *prometheus.CounterVec
	// Pruned counts rows removed by retention, by kind (payload|event).
	Pruned *prometheus.CounterVec
	// Backfill counts gaps settled by backfill, by outcome.
	Backfill *prometheus.CounterVec
	// BackfillRefused counts backfill requests not made or answers not
	// taken, by provider and reason.
	BackfillRefused *prometheus.CounterVec
	// BackfillLog counts what event-log passes found, by provider and outcome.
	BackfillLog *prometheus.CounterVec
	// BackfillLogPasses counts event-log passes by provider and result.
	BackfillLogPasses *prometheus.CounterVec
	// BackfillLogSkipped counts listed event-log entries that could not be
	// stored and were passed over, by provider.
	BackfillLogSkipped *prometheus.CounterVec
	// UnsignedConflicts counts deliveries refused for carrying a different
	// body under a stored key the provider does not sign, by provider.
	UnsignedConflicts *prometheus.CounterVec
	// AlertPosts counts alert POSTs to PGINBOX_ALERT_URL by outcome
	// (delivered, retry, rejected).
	AlertPosts *prometheus.CounterVec

	// order exports the ordering series; nil without a pool.
	order *orderCollector
}

// BackfillOutcomes are the outcome label values of pginbox_backfill_total.
var BackfillOutcomes = []string{"ingested", "duplicate", "tombstoned", "postponed", "failed"}

// refusedReasons are the reason label values of pginbox_backfill_refused_total.
var refusedReasons = []string{api.RefusedForeignOrigin, api.RefusedBadStatusURL, api.RefusedRedirect, api.RefusedDial}

// LogPassResults are the result label values of
// pginbox_backfill_log_passes_total: complete, or why a pass was cut short.
var LogPassResults = []string{"complete", "unauthorized", "api_error", "malformed", "refused", "cut_short", "error"}

// New registers the runner's metrics, the Go and process collectors,
// and a queue-depth gauge read from the database at scrape time.
func New(pool *pgxpool.Pool) *Set {
	r := prometheus.NewRegistry()
	m := &Set{
		Registry: r,
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pginbox_deliveries_total", Help: "Verified deliveries stored, by provider and outcome (created, updated, duplicate).",
		}, []string{"provider", "outcome"}),
		Rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pginbox_rejections_total", Help: "Deliveries answered with a non-2xx status, by provider and reason; none wrote a row, except a 503 whose commit went unconfirmed (pginbox_ingest_commit_unconfirmed_total).",
		}, []string{"provider", "reason"}),
		RequestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pginbox_request_duration_seconds", Help: "Time to answer POST /webhooks/{provider}.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"provider"}),
		IngestSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pginbox_ingest_duration_seconds", Help: "Time to store one verified delivery: waiting for its batch, then the batch's statement and commit.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 10},
		}),
		IngestBatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pginbox_ingest_batch_size", Help: "Deliveries stored by one ingest transaction (group commit).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
		}),
		IngestBatchWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pginbox_ingest_batch_wait_seconds", Help: "Time a verified delivery waited for its ingest batch to start.",
			Buckets: []float64{.0001, .0005, .001, .002, .005, .01, .02, .05, .1, .5, 1},
		}),
		IngestCommitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pginbox_ingest_commit_duration_seconds", Help: "Time of one ingest batch's webhooks.ingest_batch() statement and its commit.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 10},
		}),
		IngestUnconfirmed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_ingest_commit_unconfirmed_total",
			Help: "Deliveries answered 503 because their transaction's commit was not confirmed, by reason: sync_rep_cancelled (the wait for the synchronous standbys was cancelled; committed locally only), deadline (the statement and its commit succeeded only after the ingest deadline), no_answer (the connection ended before the commit's answer). Such a delivery may be stored: its retry is a duplicate."},
			[]string{"reason"}),
		Claimed:    prometheus.NewCounter(prometheus.CounterOpts{Name: "pginbox_events_claimed_total", Help: "Events claimed by this runner's workers."}),
		Completed:  prometheus.NewCounter(prometheus.CounterOpts{Name: "pginbox_events_completed_total", Help: "Events completed (handler succeeded and complete() committed)."}),
		Failed:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_events_failed_total", Help: "Handler failures, by the event's new status (pending: retried later, dead)."}, []string{"status"}),
		LostLeases: prometheus.NewCounter(prometheus.CounterOpts{Name: "pginbox_lost_leases_total", Help: "Completions refused because the lease was lost; the handler's writes rolled back."}),
		Released:   prometheus.NewCounter(prometheus.CounterOpts{Name: "pginbox_events_released_total", Help: "Claimed events handed back unstarted (shutdown)."}),
		HandlerSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pginbox_handler_duration_seconds", Help: "Time a handler took for one event.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30},
		}),
		HandlerPanics:    prometheus.NewCounter(prometheus.CounterOpts{Name: "pginbox_handler_panics_total", Help: "Handler panics (each failed its event)."}),
		BatchFallbacks:   prometheus.NewCounter(prometheus.CounterOpts{Name: "pginbox_batch_fallbacks_total", Help: "sql: batch statements (process_pending or process_batch) that overran or failed as a whole: the batch ran again with the two-phase lease, or event by event."}),
		ListenerConnects: prometheus.NewCounter(prometheus.CounterOpts{Name: "pginbox_listener_connects_total", Help: "LISTEN connections established (more than one means reconnects)."}),
		Wakeups:          prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_worker_wakeups_total", Help: "Worker wake-ups by source."}, []string{"source"}),
		Notifies:         prometheus.NewCounter(prometheus.CounterOpts{Name: "pginbox_notifies_total", Help: "Coalesced NOTIFY webhooks_events sent."}),
		ScheduledRuns:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_scheduled_runs_total", Help: "Scheduled jobs run, by job and result."}, []string{"job", "result"}),
		Backfill:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_backfill_total", Help: "Gaps settled by backfill, by outcome (ingested, duplicate, tombstoned, postponed, failed)."}, []string{"outcome"}),
		BackfillRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_backfill_refused_total",
			Help: "Backfill requests not made or answers not taken (status_url on another origin, redirect, refused dial), by provider and reason."},
			[]string{"provider", "reason"}),
		BackfillLog: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_backfill_log_events_total",
			Help: "Event-log backfill (Stripe events, GitHub App deliveries), by provider and outcome: listed, recovered (stored as new), duplicate (already stored), page (pages read)."},
			[]string{"provider", "outcome"}),
		BackfillLogPasses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_backfill_log_passes_total",
			Help: "Event-log backfill passes by provider and result: complete (checkpoint moved), or why one was cut short (unauthorized, api_error, malformed, refused, cut_short, error)."},
			[]string{"provider", "result"}),
		BackfillLogSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_backfill_log_skipped_total",
			Help: "Event-log entries listed by the provider that could not be stored (malformed, too deep, not fetchable, refused by Postgres): logged and passed over, by provider."},
			[]string{"provider"}),
		UnsignedConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_unsigned_key_conflicts_total",
			Help: "Deliveries answered duplicate and not stored: a different body under a stored key the provider does not sign (github, shopify, linear, sume keyed by X-Sume-Event-Id)."},
			[]string{"provider"}),
		AlertPosts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_alert_posts_total",
			Help: "Alert POSTs to PGINBOX_ALERT_URL, by outcome: delivered (2xx), retry (no answer, 5xx, 408, 429: tried again with backoff), rejected (another status: given up)."},
			[]string{"outcome"}),
		Pruned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pginbox_pruned_total", Help: "Rows removed by retention: payloads dropped, events deleted."}, []string{"kind"}),
	}
	r.MustRegister(m.Deliveries, m.Rejections, m.RequestSeconds, m.IngestSeconds, m.IngestBatchSize, m.IngestBatchWait, m.IngestCommitSeconds, m.Claimed, m.Completed,
		m.Failed, m.LostLeases, m.Released, m.HandlerSeconds, m.HandlerPanics, m.BatchFallbacks, m.ListenerConnects, m.Wakeups,
		m.Notifies, m.ScheduledRuns, m.Pruned, m.Backfill, m.BackfillRefused, m.UnsignedConflicts, m.BackfillLog, m.BackfillLogPasses,
		m.BackfillLogSkipped, m.AlertPosts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Served as 0 from the start, whatever this runner is configured to
	// do: a series the shipped alert rules select must exist before its
	// first increase (increase() and rate() miss a counter born at 1), and
	// a rule over a name never served cannot be told from a misspelt one.
	for _, o := range []string{"delivered", "retry", "rejected"} {
		m.AlertPosts.WithLabelValues(o)
	}
	for _, o := range BackfillOutcomes {
		m.Backfill.WithLabelValues(o)
	}
	r.MustRegister(m.IngestUnconfirmed)
	for _, r := range []string{"sync_rep_cancelled", "deadline", "no_answer"} {
		m.IngestUnconfirmed.WithLabelValues(r) // served as 0 before the first one
	}
	if pool != nil {
		rd := &dbReader{pool: pool}
		m.order = &orderCollector{rd: rd}
		r.MustRegister(&queueCollector{rd: rd}, &checkCollector{rd: rd}, m.order)
	}
	return m
}

// ServeProviders serves, as 0 from the start, every provider-labelled
// series the shipped alert rules select, once per configured provider:
// pginbox_rejections_total{reason="database unavailable"},
// pginbox_backfill_refused_total for each refusal reason and
// pginbox_backfill_log_passes_total for each of [LogPassResults] (whether
// or not the provider has a status API or an event log), and pginbox_out_of_order_total
// and pginbox_blocked_sequences (whether or not it is ordered; the database
// adds every ordered provider, configured here or not). The runner calls
// it once, before it serves /metrics.
func (m *Set) ServeProviders(providers []string) {
	for _, p := range providers {
		m.Rejections.WithLabelValues(p, "database unavailable")
		for _, r := range refusedReasons {
			m.BackfillRefused.WithLabelValues(p, r)
		}
		for _, r := range LogPassResults {
			m.BackfillLogPasses.WithLabelValues(p, r)
		}
	}
	if m.order != nil {
		m.order.configure(providers)
	}
}

var queueDepthDesc = prometheus.NewDesc("pginbox_queue_depth", "Events pending, processing or dead, read at scrape time.", []string{"status"}, nil)
var oldestPendingDesc = prometheus.NewDesc("pginbox_oldest_pending_seconds", "Age of the oldest claimable pending event.", nil, nil)

// queueCollector exports the queue depth read by the shared dbReader.
type queueCollector struct{ rd *dbReader }

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- oldestPendingDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.rd.read()
	if r.queueErr != nil {
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, r.queueErr)
		return
	}
	q := r.queue
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(q.Pending), "pending")
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(q.Processing), "processing")
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(q.Dead), "dead")
	ch <- prometheus.MustNewConstMetric(oldestPendingDesc, prometheus.GaugeValue, q.OldestPending)
}

var checkOKDesc = prometheus.NewDesc("pginbox_check_ok", "1 when the anomaly check's latest value is within its range (or it has no data, or has not run yet), 0 on a breach.", []string{"name", "family"}, nil)
var checkValueDesc = prometheus.NewDesc("pginbox_check_value", "The anomaly check's latest value.", []string{"name", "family"}, nil)

// checkCollector exports the latest result of every enabled check, read
// by the shared dbReader (nothing while the database is unreachable): a
// check that has not run yet is ok (1) and has no value.
type checkCollector struct{ rd *dbReader }

func (c *checkCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- checkOKDesc
	ch <- checkValueDesc
}

func (c *checkCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.rd.read()
	if r.checksErr != nil {
		return // the database is unreachable: nothing to export this scrape
	}
	for _, ck := range r.checks {
		v := 0.0
		if ck.ok == nil || *ck.ok { // nil: not run yet
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(checkOKDesc, prometheus.GaugeValue, v, ck.name, ck.family)
		if ck.value != nil {
			ch <- prometheus.MustNewConstMetric(checkValueDesc, prometheus.GaugeValue, *ck.value, ck.name, ck.family)
		}
	}
}

var outOfOrderDesc = prometheus.NewDesc("pginbox_out_of_order_total",
	"Events processed after a later event of their sequence had been processed (late arrivals of ordered providers), by provider; events pruned since are still counted.",
	[]string{"provider"}, nil)
var blockedSequencesDesc = prometheus.NewDesc("pginbox_blocked_sequences",
	"Sequences of an ordered provider whose head fails and is retried, or is dead while dead_blocks, holding the later events of its key (webhooks.blocked_sequences).",
	[]string{"provider"}, nil)

// orderCollector exports the ordering counts read by the shared dbReader:
// every configured and every ordered provider from 0 (a rule on a series
// that was never served cannot fire), and every provider with events
// processed out of order. pginbox_out_of_order_total comes from the
// database, so it is the same in every runner and never goes down: prune()
// keeps the count of the events it deletes.
type orderCollector struct {
	rd         *dbReader
	mu         sync.Mutex
	configured []string
}

// configure sets the configured providers, served from 0.
func (c *orderCollector) configure(providers []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configured = slices.Clone(providers)
}

func (c *orderCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outOfOrderDesc
	ch <- blockedSequencesDesc
}

func (c *orderCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.rd.read()
	if r.orderErr != nil {
		return // the database is unreachable (or not migrated): nothing this scrape
	}
	c.mu.Lock()
	configured := c.configured
	c.mu.Unlock()
	for p, n := range r.order.OutOfOrder {
		ch <- prometheus.MustNewConstMetric(outOfOrderDesc, prometheus.CounterValue, float64(n), p)
	}
	for p, n := range r.order.Blocked {
		ch <- prometheus.MustNewConstMetric(blockedSequencesDesc, prometheus.GaugeValue, float64(n), p)
	}
	for _, p := range configured {
		if _, ok := r.order.OutOfOrder[p]; !ok {
			ch <- prometheus.MustNewConstMetric(outOfOrderDesc, prometheus.CounterValue, 0, p)
		}
		if _, ok := r.order.Blocked[p]; !ok {
			ch <- prometheus.MustNewConstMetric(blockedSequencesDesc, prometheus.GaugeValue, 0, p)
		}
	}
}
