// Package ingest receives webhook deliveries: POST /webhooks/{provider}
// reads the raw body, verifies it with the provider's verifier (package
// verify), and stores it with one webhooks.ingest_webhook() call whose
// commit is durable before the 2xx answer.
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/provider/sig"
	"github.com/pginbox/pginbox/internal/tracing"
)

// ingestResult is the answer to a stored delivery.
type ingestResult struct {
	EventID int64  `json:"event_id"`
	Outcome string `json:"outcome"`
}

// Receiver serves POST /webhooks/{provider}: it reads the raw body, verifies
// the signature over those exact bytes, extracts the idempotency key and
// stores the delivery with webhooks.ingest_webhook(). It answers 2xx only
// once the row is committed and the commit confirmed: flushed locally and,
// when synchronous_standby_names names any, on the synchronous standbys. A
// commit whose wait for them was cancelled (the ingest deadline, an
// operator's cancel), or whose answer never came, is answered 503 for every
// delivery it held, logged with the reason and counted in
// pginbox_ingest_commit_unconfirmed_total.
type Receiver struct {
	// Pool is the ingest pool: the HTTP path's own, never starved by workers.
	// Its connections must report notices to [Notices] (ConnConfig.OnNotice),
	// which tells a commit whose wait for the synchronous standbys was
	// cancelled; without it only the deadline reveals one.
	Pool *pgxpool.Pool
	// Providers maps the {provider} path value to its verifier.
	Providers map[string]sig.Provider
	// MaxBody is the largest body accepted (413 past it).
	MaxBody int64
	// Timeout bounds the ingest call (503 past it).
	Timeout time.Duration
	// Metrics counts deliveries, rejections and their timings.
	Metrics *metrics.Set
	// Log receives rejections and database failures.
	Log *slog.Logger
	// OnStored is called after a created or updated delivery committed
	// (wakes workers, schedules a coalesced NOTIFY). Optional.
	OnStored func()
	// Now is the clock for timestamp tolerance. Nil means time.Now.
	Now func() time.Time
	// Tracing, when enabled, gives each delivery a server span (see
	// trace.go) and stores its traceparent with the event. Nil: off.
	Tracing *tracing.Tracing
	// MaxBatch is the most deliveries stored in one transaction: deliveries
	// that arrive while Flushers transactions are committing wait and are
	// stored together (group commit). 1 or less stores each alone.
	MaxBatch int
	// Flushers is how many batch transactions are in flight at once
	// (default 4).
	Flushers int

	batchOnce sync.Once
	batches   *batcher
}

// ServeHTTP handles one delivery, in a server span when tracing is on.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !rc.Tracing.Enabled() {
		rc.serve(w, r)
		return
	}
	r, span := rc.startSpan(r)
	defer span.End()
	rc.serve(w, r)
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name := r.PathValue("provider")
	p, ok := rc.Providers[name]
	if !ok {
		// An unknown name is not a label we want to grow without bound.
		rc.reject(w, r, "unknown", http.StatusNotFound, "unknown provider")
		return
	}
	defer func() { rc.Metrics.RequestSeconds.WithLabelValues(name).Observe(time.Since(start).Seconds()) }()

	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSONMediaType(ct) {
		rc.reject(w, r, name, http.StatusUnsupportedMediaType, "content type not json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rc.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			rc.reject(w, r, name, http.StatusRequestEntityTooLarge, "body too large")
			return
		}
		rc.reject(w, r, name, http.StatusBadRequest, "body unreadable")
		return
	}
	now := time.Now
	if rc.Now != nil {
		now = rc.Now
	}
	if err := p.Verify(r.Header, body, now()); err != nil {
		rc.rejectErr(w, r, name, err)
		return
	}
	d, err := p.Identify(r.Header, body)
	if err != nil {
		rc.rejectErr(w, r, name, err)
		return
	}
	if d.Handshake != nil {
		// The provider checking the endpoint (slack's url_verification):
		// signed, so answered as it asks, and stored nowhere.
		rc.Log.Info("handshake answered", "provider", name)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(d.Handshake)
		return
	}
	res, err := rc.store(r.Context(), name, d)
	if err != nil {
		if pgErr := permanent(err); pgErr != nil {
			// Data the database refuses whatever the retry (Identify catches
			// nearly all of it): a 503 would only make the provider retry forever.
			rc.reject(w, r, name, http.StatusBadRequest, "rejected by database")
			rc.Log.Warn("delivery refused by the database", "provider", name, "sqlstate", pgErr.Code, "error", pgErr.Message)
			return
		}
		if reason := unconfirmedReason(err); reason != "" {
			// Perhaps stored, but not known to be durable everywhere it must
			// be: never a 2xx. The retry is a duplicate, answered 2xx once
			// its own commit is confirmed.
			rc.Log.Error("ingest commit not confirmed; answering 503 so the provider retries", "provider", name,
				"reason", reason, "error", err)
		} else {
			rc.Log.Error("ingest failed; answering 503 so the provider retries", "provider", name, "error", err)
		}
		w.Header().Set("Retry-After", "5")
		rc.reject(w, r, name, http.StatusServiceUnavailable, "database unavailable")
		return
	}
	rc.Metrics.Deliveries.WithLabelValues(name, res.Outcome).Inc()
	spanStored(r.Context(), res.EventID, res.Outcome)
	if res.Outcome != "duplicate" && rc.OnStored != nil {
		rc.OnStored()
	}
	writeJSON(w, http.StatusOK, res)
}

// ingestSQL stores one delivery in a transaction of its own (one statement,
// one round trip) whose commit waits for the WAL flush, locally and on the
// synchronous standbys, whatever the server, database or role default for
// synchronous_commit is: set_config(..., true) raises it for this
// transaction only, to on, or keeps remote_apply (stricter) when that is the
// default. A connection parameter would do the same but transaction poolers
// refuse it, and a default set by a role or ALTER DATABASE would win over
// nothing. The setting is read at commit, after the statement ran, so its
// place in the statement does not matter.
//
// A duplicate writes nothing, and a transaction that writes no WAL commits
// without waiting for anything: its 2xx would not wait for the stored row to
// reach the synchronous standbys, which it need not have (a commit whose
// wait was cancelled is visible at once, committed locally only). So, when
// synchronous_standby_names names any, a duplicate's transaction writes one
// small WAL record of its own (a transactional logical decoding message,
// prefix "pginbox", which also assigns it a transaction id): its commit then
// waits for the WAL up to that record, after the stored row's commit record,
// to be flushed locally and on the synchronous standbys. Without synchronous
// standbys a duplicate stays read-only: pginbox's own commits are flushed
// locally before they are visible. pg_logical_emit_message is executable by
// PUBLIC by default and works at any wal_level.
//
// trace_parent ($6) is the delivery's span (NULL when tracing is off): the
// handler runs of the event join its trace.
const ingestSQL = `SELECT event_id, outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb, body_sha256 => $5, trace_parent => $6)
	WHERE set_config('synchronous_commit', CASE current_setting('synchronous_commit')
		WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END, true) IS NOT NULL
	AND (outcome <> 'duplicate' OR current_setting('synchronous_standby_names') = ''
		OR pg_logical_emit_message(true, 'pginbox', 'duplicate acknowledged') IS NOT NULL)`

// store stores one verified delivery, in a batch with the deliveries
// arriving beside it unless MaxBatch is 1 or less, and returns its own
// outcome once its transaction committed.
func (rc *Receiver) store(ctx context.Context, provider string, v sig.Delivery) (ingestResult, error) {
	ctx, cancel := context.WithTimeout(ctx, rc.Timeout)
	defer cancel()
	start := time.Now()
	defer func() { rc.Metrics.IngestSeconds.Observe(time.Since(start).Seconds()) }()
	d := &delivery{provider: provider, key: v.ExternalID, eventType: v.EventType, payload: v.Payload}
	// A key the signature does not cover proves nothing: pass the body's
	// digest, so a captured body replayed under a fresh key is a duplicate
	// and a different body never replaces a stored one.
	if !v.KeySigned {
		sum := sha256.Sum256(v.Payload)
		d.digest = sum[:]
	}
	if tp := tracing.TraceParent(ctx); tp != "" {
		d.traceParent = &tp
	}
	if rc.MaxBatch <= 1 {
		return rc.single(ctx, d)
	}
	rc.batchOnce.Do(func() {
		flushers := rc.Flushers
		if flushers < 1 {
			flushers = 4
		}
		rc.batches = &batcher{pool: rc.Pool, max: rc.MaxBatch, flushers: flushers, timeout: rc.Timeout,
			metrics: rc.Metrics, single: rc.single}
	})
	return rc.batches.store(ctx, d)
}

// single stores one delivery in a transaction of its own; a commit not
// confirmed (see confirmed) is an error, counted.
func (rc *Receiver) single(ctx context.Context, d *delivery) (ingestResult, error) {
	ctx, cancel := context.WithTimeout(ctx, rc.Timeout)
	defer cancel()
	var res ingestResult
	err := confirmed(ctx, rc.Pool, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, ingestSQL, d.provider, d.key, d.eventType, string(d.payload), d.digest, d.traceParent).
			Scan(&res.EventID, &res.Outcome)
	})
	if err != nil {
		countUnconfirmed(rc.Metrics, err, 1)
		return ingestResult{}, err
	}
	return res, nil
}

// permanent returns the database error when the database refused the
// delivery's data itself (SQLSTATE classes 22 data exception, 23 integrity constraint, 54 program
// limit exceeded, e.g. JSON nested too deep): retrying cannot help. Anything
// else (connection loss, timeouts, a schema not migrated yet, shutdown) is
// worth a retry and answered 503: permanent returns nil.
func permanent(err error) *pgconn.PgError {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return nil
	}
	switch pgErr.Code[:2] {
	case "22", "23", "54":
		return pgErr
	}
	return nil
}

func (rc *Receiver) rejectErr(w http.ResponseWriter, r *http.Request, provider string, err error) {
	var rej *sig.RejectError
	if errors.As(err, &rej) {
		rc.reject(w, r, provider, rej.Status, rej.Reason)
		return
	}
	rc.reject(w, r, provider, http.StatusBadRequest, "bad request")
}

// reject answers a one-line JSON error, logs the provider and the reason
// (never the body or a secret) and counts it.
func (rc *Receiver) reject(w http.ResponseWriter, r *http.Request, provider string, status int, reason string) {
	rejected(r.Context(), status, reason)
	rc.Metrics.Rejections.WithLabelValues(provider, reason).Inc()
	level := slog.LevelInfo
	if status == http.StatusUnauthorized || status >= 500 {
		level = slog.LevelWarn
	}
	rc.Log.Log(r.Context(), level, "delivery rejected", "provider", provider, "status", status, "reason", reason, "remote", r.RemoteAddr)
	writeJSON(w, status, map[string]string{"error": reason})
}

func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
