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
	// Skipped counts listed entries that could not be stored (malformed,
	// too deep, not fetchable, refused by Postgres): logged and passed over.
	Skipped int `json:"skipped"`
	// Resumed reports that the pass went on from where an unfinished one
	// stopped (see [RunLog]); ResumeCursor, when the pass was cut short
	// after reading some pages, is the cursor the next pass goes on from.
	Resumed      bool   `json:"resumed,omitempty"`
	ResumeCursor string `json:"resume_cursor,omitempty"`
	// Error says why the pass was cut short, "" when complete.
	Error string `json:"error,omitempty"`
}

// logState is a provider's row of webhooks.backfill_checkpoints as a pass
// starts from it.
type logState struct {
	// readUntil is how far the log has been read completely (ok: a row exists).
	readUntil time.Time
	ok        bool
	// resume is where an unfinished pass stopped, nil when none did.
	resume *resumePoint
}

// resumePoint is the progress of a pass that was cut short: every entry
// listed from the top of the window (Until) down to the page before Cursor
// has been handled, the oldest of them created at Reached. The next pass
// reads the new entries from the top down to Until minus the overlap, then
// continues from Cursor down to the bottom of its window, so a backlog too
// long for one pass is read across several. read_until does not move until
// both reads are done.
type resumePoint struct {
	Cursor  string
	Reached time.Time
	Until   time.Time
}

// maxResumeCursor is the longest cursor kept for the next pass, in bytes.
const maxResumeCursor = 1024

// loadLogState reads provider's checkpoint row.
func loadLogState(ctx context.Context, pool *pgxpool.Pool, provider string) (logState, error) {
	var st logState
	var cursor *string
	var reached, until *time.Time
	err := pool.QueryRow(ctx, `SELECT read_until, resume_cursor, resume_reached, resume_until
		FROM webhooks.backfill_checkpoints WHERE provider = $1`, provider).Scan(&st.readUntil, &cursor, &reached, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return logState{}, nil
	}
	if err != nil {
		return logState{}, fmt.Errorf("backfill %s: read checkpoint: %w", provider, err)
	}
	st.ok = true
	if cursor != nil && reached != nil && until != nil && until.After(st.readUntil) {
		st.resume = &resumePoint{Cursor: *cursor, Reached: *reached, Until: *until}
	}
	return st, nil
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
// malformed page, a cycle in the list's cursors) records the error and
// leaves the checkpoint. The list is newest first, so what is unread is
// older than anything read.
//
// Three rules keep one bad entry, a wrong clock or a long backlog from
// stalling the log:
//
//   - an entry that cannot be stored (malformed, too deep, not fetchable,
//     refused by Postgres) is logged, counted in LogReport.Skipped and passed
//     over: the pass goes on and can complete;
//   - the checkpoint is never set later than the provider's own clock (the
//     Date of its list pages, or the newest created time listed) plus the
//     overlap, so a local clock running ahead cannot hide events;
//   - a pass cut short after reading some pages records where it stopped (a
//     resume point: the cursor of the first page not read). The next pass
//     reads the new entries from the top down to where that pass began, then
//     goes on from the cursor: a backlog longer than Options.PassTimeout is
//     read over several passes, and the checkpoint moves once it is all read.
func RunLog(ctx context.Context, pool *pgxpool.Pool, el EventLog, opts Options) (LogReport, error) {
	opts = opts.withDefaults()
	provider := el.Provider()
	log := opts.Logger.With("component", "backfill", "provider", provider)
	ctx, cancel := context.WithTimeoutCause(ctx, opts.PassTimeout,
		fmt.Errorf("backfill pass cut short at its deadline (%s): the checkpoint stays", opts.PassTimeout))
	defer cancel()

	now := opts.now()
	rep := LogReport{Provider: provider, To: now.Add(-opts.Lag).Truncate(time.Second)}
	st, err := loadLogState(ctx, pool, provider)
	if err != nil {
		return rep, fmt.Errorf("%w: %w", ErrNoPass, err)
	}
	rep.From = now.Add(-opts.Lookback)
	if st.ok {
		rep.From = st.readUntil.Add(-opts.Overlap)
	}
	rep.From = rep.From.Truncate(time.Second)

	p := &logPass{pool: pool, el: el, rep: &rep, log: log, seen: map[string]bool{},
		r: &requester{opts: opts, lim: &limiter{interval: time.Duration(float64(time.Second) / opts.LogRate)}, log: log}}
	resume, err := p.run(ctx, st, opts.Overlap)
	rep.Requests = p.r.requests
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
	bound := p.providerNow().Add(opts.Overlap)
	if !p.providerNow().IsZero() && rep.To.After(bound) {
		log.Warn("backfill: the local clock is ahead of the provider's; the checkpoint stays within the provider's time",
			"local_to", rep.To, "provider_now", p.providerNow())
		rep.To = bound.Truncate(time.Second)
	}
	if resume != nil && resume.Until.IsZero() {
		resume.Until = rep.To // a new resume point: read from the top of this window
	}
	if resume != nil && (resume.Reached.IsZero() || resume.Reached.After(resume.Until)) {
		resume.Reached = resume.Until // no created time read (only entries without one)
	}
	if resume != nil && !rep.Complete {
		rep.ResumeCursor = resume.Cursor
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer scancel()
	var ceiling *time.Time // the provider's clock plus the overlap: no checkpoint is kept past it
	if !p.providerNow().IsZero() {
		ceiling = &bound
	}
	if serr := saveCheckpoint(sctx, pool, rep, now.Add(-opts.Lookback), resume, ceiling); serr != nil {
		err = errors.Join(err, serr)
	}
	if rep.Recovered > 0 {
		if _, nerr := pool.Exec(sctx, `SELECT pg_notify('webhooks_events', 'backfill')`); nerr != nil {
			log.Warn("notify webhooks_events", "error", nerr)
		}
	}
	log.Info("backfill event-log pass", "from", rep.From, "to", rep.To, "complete", rep.Complete, "resumed", rep.Resumed,
		"pages", rep.Pages, "listed", rep.Listed, "recovered", rep.Recovered, "duplicates", rep.Duplicates,
		"skipped", rep.Skipped, "fetched", rep.Fetched, "requests", rep.Requests, "error", rep.Error)
	var apiErr *APIError
	if errors.As(err, &apiErr) && errors.Is(err, ErrUnauthorized) {
		return rep, &AuthError{Provider: provider, StatusCode: apiErr.StatusCode}
	}
	if err != nil {
		return rep, fmt.Errorf("backfill %s: event log: %w", provider, err)
	}
	return rep, nil
}

// saveCheckpoint records the pass: a complete one moves read_until to
// rep.To and drops any resume point; one cut short keeps read_until (or,
// for a provider never read completely, starts it at the beginning of the
// lookback, so the checkpoint-age check sees a log that is not being read)
// and records resume, the point the next pass continues from (nil: none).
// A read_until later than ceiling (the provider's clock plus the overlap,
// nil when unknown), set while the local clock ran ahead before this rule,
// is brought back to rep.To by a complete pass.
func saveCheckpoint(ctx context.Context, pool *pgxpool.Pool, rep LogReport, lookbackStart time.Time, resume *resumePoint, ceiling *time.Time) error {
	var errText *string
	if !rep.Complete {
		e := rep.Error
		if len(e) > 500 {
			e = e[:500]
		}
		errText = &e
	}
	var cursor *string
	var reached, until *time.Time
	if resume != nil && !rep.Complete {
		cursor, reached, until = &resume.Cursor, &resume.Reached, &resume.Until
	}
	_, err := pool.Exec(ctx, `
		INSERT INTO webhooks.backfill_checkpoints AS k
		       (provider, read_until, completed_at, last_pass_at, last_listed, last_recovered, last_error, listed_total, recovered_total,
		        resume_cursor, resume_reached, resume_until)
		VALUES ($1, CASE WHEN $2::boolean THEN $3::timestamptz ELSE $4::timestamptz END, now(), now(), $5::bigint, $6::bigint, $7::text, $5::bigint, $6::bigint,
		        $8::text, $9::timestamptz, $10::timestamptz)
		ON CONFLICT (provider) DO UPDATE SET
		    read_until      = CASE WHEN NOT $2::boolean THEN k.read_until
		                           WHEN k.read_until > $11::timestamptz THEN $3::timestamptz
		                           ELSE greatest(k.read_until, $3::timestamptz) END,
		    completed_at    = CASE WHEN $2 THEN now() ELSE k.completed_at END,
		    last_pass_at    = now(),
		    last_listed     = $5,
		    last_recovered  = $6,
		    last_error      = $7,
		    listed_total    = k.listed_total + $5,
		    recovered_total = k.recovered_total + $6,
		    resume_cursor   = $8,
		    resume_reached  = $9,
		    resume_until    = $10`,
		rep.Provider, rep.Complete, rep.To, lookbackStart, int64(rep.Listed), int64(rep.Recovered), errText,
		cursor, reached, until, ceiling)
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
