package backfill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LogReport counts what one event-log pass of a provider did.
type LogReport struct {
	Provider string `json:"provider"`
	// From and To bound the window read: the checkpoint minus the overlap
	// (or now minus the lookback on a first pass) up to now minus the lag.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Complete reports that every page of the window was read: the
	// checkpoint moved to To. A pass cut short leaves it where it was.
	Complete bool `json:"complete"`
	// Pages read; Listed distinct keys listed in the window; Recovered
	// ingested as new events (source 'backfill'); Duplicates already stored
	// or stored by a webhook meanwhile; Fetched detail requests.
	Pages      int `json:"pages"`
	Listed     int `json:"listed"`
	Recovered  int `json:"recovered"`
	Duplicates int `json:"duplicates"`
	Fetched    int `json:"fetched"`
	Malformed  int `json:"malformed"`
	Requests   int `json:"requests"`
	// Error says why the pass was cut short, "" when complete.
	Error string `json:"error,omitempty"`
}

// checkpoint returns how far provider's log was read completely.
func checkpoint(ctx context.Context, pool *pgxpool.Pool, provider string) (time.Time, bool, error) {
	var at time.Time
	err := pool.QueryRow(ctx, `SELECT read_until FROM webhooks.backfill_checkpoints WHERE provider = $1`, provider).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("backfill %s: read checkpoint: %w", provider, err)
	}
	return at, true, nil
}

// RunLog runs one event-log pass of one provider: it lists the log from the
// checkpoint minus Options.Overlap (the first time: now minus
// Options.Lookback) up to now minus Options.Lag, page by page, and ingests
// with webhooks.ingest_webhook(..., source => 'backfill') every listed event
// not stored yet, under the key a webhook uses, with the event type and
// payload a webhook would carry; a webhook that lands meanwhile wins (an
// 'updated' outcome is rolled back). Entries already stored are not fetched.
//
// Requests follow the rules of [Run]: at most Options.LogRate per second,
// Options.RequestTimeout each, 5xx/429/timeouts retried with backoff
// (honouring Retry-After), 401/403 end the pass with an *AuthError. Only
// when every page of the window was read does the checkpoint move to its
// end; a pass cut short (an error, Options.PassTimeout, shutdown, a
// malformed page) records the error and leaves the checkpoint. The list is
// newest first, so what is unread is older than anything read: the next
// pass reads it again from the same checkpoint.
func RunLog(ctx context.Context, pool *pgxpool.Pool, el EventLog, opts Options) (LogReport, error) {
	opts = opts.withDefaults()
	provider := el.Provider()
	log := opts.Logger.With("component", "backfill", "provider", provider)
	ctx, cancel := context.WithTimeoutCause(ctx, opts.PassTimeout,
		fmt.Errorf("backfill pass cut short at its deadline (%s): the checkpoint stays", opts.PassTimeout))
	defer cancel()

	now := time.Now()
	rep := LogReport{Provider: provider, To: now.Add(-opts.Lag).Truncate(time.Second)}
	at, ok, err := checkpoint(ctx, pool, provider)
	if err != nil {
		return rep, fmt.Errorf("%w: %w", ErrNoPass, err)
	}
	rep.From = now.Add(-opts.Lookback)
	if ok {
		rep.From = at.Add(-opts.Overlap)
	}
	rep.From = rep.From.Truncate(time.Second)

	r := &requester{opts: opts, lim: &limiter{interval: time.Duration(float64(time.Second) / opts.LogRate)}, log: log}
	err = readLog(ctx, pool, el, r, &rep)
	rep.Requests = r.requests
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if cause := context.Cause(ctx); err != nil && cause != nil && errors.Is(err, ctx.Err()) {
		err = cause
	}
	var malformed *MalformedError
	if errors.As(err, &malformed) {
		rep.Malformed++
	}
	if err != nil {
		rep.Error = err.Error()
	} else {
		rep.Complete = true
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer scancel()
	if serr := saveCheckpoint(sctx, pool, rep, now.Add(-opts.Lookback)); serr != nil {
		err = errors.Join(err, serr)
	}
	if rep.Recovered > 0 {
		if _, nerr := pool.Exec(sctx, `SELECT pg_notify('webhooks_events', 'backfill')`); nerr != nil {
			log.Warn("notify webhooks_events", "error", nerr)
		}
	}
	log.Info("backfill event-log pass", "from", rep.From, "to", rep.To, "complete", rep.Complete, "pages", rep.Pages,
		"listed", rep.Listed, "recovered", rep.Recovered, "duplicates", rep.Duplicates, "fetched", rep.Fetched,
		"requests", rep.Requests, "error", rep.Error)
	var apiErr *APIError
	if errors.As(err, &apiErr) && errors.Is(err, ErrUnauthorized) {
		return rep, &AuthError{Provider: provider, StatusCode: apiErr.StatusCode}
	}
	if err != nil {
		return rep, fmt.Errorf("backfill %s: event log: %w", provider, err)
	}
	return rep, nil
}

// readLog pages through the window and ingests what is missing.
func readLog(ctx context.Context, pool *pgxpool.Pool, el EventLog, r *requester, rep *LogReport) error {
	seen := map[string]bool{} // a GitHub log lists every attempt of a delivery
	cursor := ""
	for {
		page, err := retry(ctx, r, func(ctx context.Context) (LogPage, error) { return el.Page(ctx, rep.From, cursor) })
		if err != nil {
			return err
		}
		rep.Pages++
		older := false
		var batch []LogEntry
		for _, e := range page.Entries {
			switch {
			case e.Created.Before(rep.From):
				older = true
			case e.Created.After(rep.To), seen[e.Key]:
			default:
				seen[e.Key] = true
				batch = append(batch, e)
			}
		}
		if err := ingestEntries(ctx, pool, el, r, rep, batch); err != nil {
			return err
		}
		if page.Next == "" || older {
			return nil
		}
		if page.Next == cursor {
			return &MalformedError{Provider: el.Provider(), ExternalID: "(list)", Reason: "the next page's cursor is this page's"}
		}
		cursor = page.Next
	}
}

// ingestEntries stores the entries of one page that are not stored yet.
func ingestEntries(ctx context.Context, pool *pgxpool.Pool, el EventLog, r *requester, rep *LogReport, batch []LogEntry) error {
	if len(batch) == 0 {
		return nil
	}
	rep.Listed += len(batch)
	keys := make([]string, len(batch))
	for i, e := range batch {
		keys[i] = e.Key
	}
	rows, err := pool.Query(ctx, `SELECT external_id FROM webhooks.events WHERE provider = $1 AND external_id = ANY($2)`,
		el.Provider(), keys)
	if err != nil {
		return fmt.Errorf("look up stored keys: %w", err)
	}
	stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("look up stored keys: %w", err)
	}
	have := make(map[string]bool, len(stored))
	for _, k := range stored {
		have[k] = true
	}
	for _, e := range batch {
		if have[e.Key] {
			rep.Duplicates++
			continue
		}
		if e.NeedsFetch {
			if e, err = retry(ctx, r, func(ctx context.Context) (LogEntry, error) { return el.Fetch(ctx, e) }); err != nil {
				return err
			}
			rep.Fetched++
		}
		outcome, err := ingestEvent(ctx, pool, el.Provider(), e.Key, e.EventType, e.Payload)
		if err != nil {
			return err
		}
		if outcome == "created" {
			rep.Recovered++
		} else {
			rep.Duplicates++
		}
	}
	return nil
}

// saveCheckpoint records the pass: a complete one moves read_until to
// rep.To; one cut short keeps it (or, for a provider never read completely,
// starts it at the beginning of the lookback, so the checkpoint-age check
// sees a log that is not being read).
func saveCheckpoint(ctx context.Context, pool *pgxpool.Pool, rep LogReport, lookbackStart time.Time) error {
	var errText *string
	if !rep.Complete {
		e := rep.Error
		if len(e) > 500 {
			e = e[:500]
		}
		errText = &e
	}
	_, err := pool.Exec(ctx, `
		INSERT INTO webhooks.backfill_checkpoints AS k
		       (provider, read_until, completed_at, last_pass_at, last_listed, last_recovered, last_error, listed_total, recovered_total)
		VALUES ($1, CASE WHEN $2::boolean THEN $3::timestamptz ELSE $4::timestamptz END, now(), now(), $5::bigint, $6::bigint, $7::text, $5::bigint, $6::bigint)
		ON CONFLICT (provider) DO UPDATE SET
		    read_until      = CASE WHEN $2::boolean THEN greatest(k.read_until, $3::timestamptz) ELSE k.read_until END,
		    completed_at    = CASE WHEN $2 THEN now() ELSE k.completed_at END,
		    last_pass_at    = now(),
		    last_listed     = $5,
		    last_recovered  = $6,
		    last_error      = $7,
		    listed_total    = k.listed_total + $5,
		    recovered_total = k.recovered_total + $6`,
		rep.Provider, rep.Complete, rep.To, lookbackStart, int64(rep.Listed), int64(rep.Recovered), errText)
	if err != nil {
		return fmt.Errorf("backfill %s: save checkpoint: %w", rep.Provider, err)
	}
	return nil
}

// requester spaces and retries the requests of one event-log pass.
type requester struct {
	opts     Options
	lim      *limiter
	log      *slog.Logger
	requests int
}

// retry calls fn under the pass's rate, timeout and retry rules: 5xx, 429
// (honouring Retry-After up to RetryMax), 408 and transport failures are
// retried up to MaxAttempts; anything else is returned at once.
func retry[T any](ctx context.Context, r *requester, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	delay := r.opts.RetryBase
	for attempt := 1; ; attempt++ {
		if err := r.lim.wait(ctx); err != nil {
			return zero, err
		}
		actx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
		v, err := fn(actx)
		cancel()
		r.requests++
		if err == nil {
			return v, nil
		}
		var apiErr *APIError
		if ctx.Err() != nil || !errors.As(err, &apiErr) || !apiErr.Retryable() || attempt >= r.opts.MaxAttempts {
			return zero, err
		}
		wait := min(delay, r.opts.RetryMax)
		if apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > r.opts.RetryMax {
				return zero, fmt.Errorf("%w (Retry-After %s is longer than the %s cap: leaving it for a later pass)",
					err, apiErr.RetryAfter, r.opts.RetryMax)
			}
			r.lim.holdUntil(time.Now().Add(apiErr.RetryAfter))
			wait = max(wait, apiErr.RetryAfter)
		}
		r.log.Debug("backfill: retrying", "attempt", attempt, "in", wait, "error", err)
		if err := r.opts.sleep(ctx, wait); err != nil {
			return zero, err
		}
		delay *= 2
	}
}
