package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options tunes a backfill pass. Zero values mean the defaults.
type Options struct {
	// Provider limits the pass to one provider. Empty means every provider.
	Provider string
	// MaxGaps is the most gaps one pass looks at, oldest deadline first.
	// Default 1000.
	MaxGaps int
	// Concurrency is the most lookups in flight at once. Default 4.
	Concurrency int
	// Rate is the most requests per second to each provider. Default 10.
	Rate float64
	// RequestTimeout bounds one request. Default 10s.
	RequestTimeout time.Duration
	// MaxAttempts is how many times a lookup is tried before the gap is left
	// for the next pass. Default 5.
	MaxAttempts int
	// RetryBase is the first retry's delay, doubled on each retry. Default 500ms.
	RetryBase time.Duration
	// RetryMax caps the delay between two attempts, Retry-After included: a
	// Retry-After longer than RetryMax ends the gap's attempts for this pass.
	// Default 30s.
	RetryMax time.Duration
	// PostponeBase and PostponeMax are passed to
	// webhooks.postpone_expectation for a job that is not finished yet: the
	// new deadline is now() + min(PostponeMax, PostponeBase * 2^checks).
	// Defaults 1m and 1h.
	PostponeBase time.Duration
	PostponeMax  time.Duration
	// PassTimeout bounds the whole pass: when it is reached, lookups in
	// flight are abandoned (nothing changes for their gaps) and Run returns
	// an error saying so. Default 5m.
	PassTimeout time.Duration
	// Backoff, when set, remembers across passes the providers whose API
	// keeps failing (no answer at all in a pass): their gaps are skipped
	// until the backoff ends. Nil: every pass asks every provider.
	Backoff *Backoff
	// Lookback is how far back the first event-log pass of a provider reads
	// (PGINBOX_BACKFILL_LOOKBACK). Default 72h.
	Lookback time.Duration
	// Overlap is how much before its checkpoint an event-log pass starts
	// reading again: the logs are eventually consistent (an event can be
	// listed after newer ones) and several events share one second. Default
	// 2m; at least 1m.
	Overlap time.Duration
	// LogRate is the most event-log requests per second to one provider
	// (Stripe allows 100 read requests per second in live mode, 25 in test
	// mode). Default 25.
	LogRate float64
	// Lag is how far behind now an event-log pass stops, so that events
	// whose webhooks are in flight are left to them. Default 30s.
	Lag time.Duration
	// Logger receives one line per gap that could not be settled and one per
	// pass. Nil means slog.Default().
	Logger *slog.Logger

	// sleep waits between attempts; tests replace it. Nil means a timer.
	sleep func(ctx context.Context, d time.Duration) error
	// now is the local clock; tests replace it. Nil means time.Now.
	now func() time.Time
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.MaxGaps <= 0 {
		o.MaxGaps = 1000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Rate <= 0 {
		o.Rate = 10
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	def(&o.RequestTimeout, 10*time.Second)
	def(&o.RetryBase, 500*time.Millisecond)
	def(&o.RetryMax, 30*time.Second)
	def(&o.PassTimeout, 5*time.Minute)
	def(&o.Lookback, 72*time.Hour)
	def(&o.Overlap, 2*time.Minute)
	def(&o.Lag, 30*time.Second)
	if o.LogRate <= 0 {
		o.LogRate = 25
	}
	o.Overlap = max(o.Overlap, time.Minute)
	def(&o.PostponeBase, time.Minute)
	def(&o.PostponeMax, time.Hour)
	if o.PostponeMax < o.PostponeBase {
		o.PostponeMax = o.PostponeBase
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.sleep == nil {
		o.sleep = sleep
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// Report counts what one backfill pass did.
type Report struct {
	// Gaps is how many gaps the pass looked at.
	Gaps int `json:"gaps"`
	// Ingested counts terminal jobs stored as new events (source 'backfill').
	Ingested int `json:"ingested"`
	// Duplicates counts terminal jobs whose event had landed meanwhile (the
	// webhook won; nothing written).
	Duplicates int `json:"duplicates"`
	// Tombstoned counts ids the provider does not know.
	Tombstoned int `json:"tombstoned"`
	// Postponed counts jobs not finished yet, whose deadline moved.
	Postponed int `json:"postponed"`
	// Skipped counts gaps with no API to ask (no PGINBOX_API_URL_<NAME> for
	// the provider) or whose provider refused the key earlier in the pass.
	Skipped int `json:"skipped"`
	// BackedOff counts gaps not asked about because their provider's API kept
	// failing in earlier passes (Options.Backoff).
	BackedOff int `json:"backed_off"`
	// Refused counts gaps backfill would not ask about or whose answer it
	// would not take: a status_url on another origin, a redirect, a refused
	// dial. Nothing changed; RefusedBy counts them by provider and reason.
	Refused   int                       `json:"refused"`
	RefusedBy map[string]map[string]int `json:"refused_by,omitempty"`
	// Failed counts gaps still unanswered after every retry (5xx, 429,
	// timeouts, transport errors) or answered with an unexpected status:
	// nothing changed, the next pass tries again.
	Failed int `json:"failed"`
	// Malformed counts responses that could not be read: nothing changed.
	Malformed int `json:"malformed"`
	// Unauthorized counts lookups refused with 401/403.
	Unauthorized int `json:"unauthorized"`
	// Requests counts the requests made to the providers' APIs, retries
	// included (a gap with nowhere to ask costs none).
	Requests int `json:"requests"`
}

// Run runs one backfill pass: it asks each gap's provider API
// (apis[provider]; a provider without one is never contacted) what became of
// the id, and
//
//   - a terminal job is ingested with webhooks.ingest_webhook(..., source =>
//     'backfill') under the id of the gap, the key a webhook uses, so
//     whichever of the two lands first is the one row; when the webhook landed
//     while the API was being asked, the backfill writes nothing (an 'updated'
//     outcome, which would overwrite the webhook's payload, is rolled back);
//   - an id the provider does not know is tombstoned ('unknown to provider');
//   - a job not finished yet gets a later deadline (postpone_expectation);
//   - 5xx, 429 (honouring Retry-After) and timeouts are retried with
//     exponential backoff capped at RetryMax; if they persist, nothing changes;
//   - 401/403 stop that provider's lookups for the pass: nothing is
//     tombstoned and Run returns an *AuthError;
//   - a malformed response is logged and counted; nothing changes;
//   - a request the API would not make (a status_url on another origin) or
//     an answer it does not take (a redirect) is a *RefusedError: logged,
//     counted in Report.RefusedBy; nothing changes.
//
// The whole pass ends at Options.PassTimeout; with Options.Backoff, a
// provider whose API gave no answer at all in a pass is skipped for a while.
//
// Lookups run at most Concurrency at a time and at most Rate per second per
// provider. Run returns early with an error when ctx ends or the
// database fails; the report then counts what was done.
func Run(ctx context.Context, pool *pgxpool.Pool, apis map[string]StatusAPI, opts Options) (Report, error) {
	opts = opts.withDefaults()
	log := opts.Logger.With("component", "backfill")
	var report Report
	ctx, cancelPass := context.WithTimeoutCause(ctx, opts.PassTimeout,
		fmt.Errorf("backfill pass cut short at its deadline (%s): unanswered gaps are left for the next pass", opts.PassTimeout))
	defer cancelPass()

	gaps, err := FindGaps(ctx, pool, opts.Provider, opts.MaxGaps)
	if err != nil {
		return report, fmt.Errorf("%w: %w", ErrNoPass, err)
	}
	report.Gaps = len(gaps)
	if len(gaps) == 0 {
		return report, nil
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b := &backfiller{
		pool:     pool,
		opts:     opts,
		log:      log,
		limiters: map[string]*limiter{},
		refused:  map[string]*AuthError{},
		health:   map[string]*providerHealth{},
	}
	now := time.Now()
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for _, g := range gaps {
		api := apis[g.Provider]
		if api == nil {
			b.count(func(r *Report) { r.Skipped++ })
			continue
		}
		if opts.Backoff != nil && opts.Backoff.Until(g.Provider).After(now) {
			b.count(func(r *Report) { r.BackedOff++ })
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := b.settle(ctx, api, g); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()

	b.mu.Lock()
	if opts.Backoff != nil && (ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded)) {
		// A shutdown says nothing about the API; a pass deadline does.
		for name, h := range b.health {
			switch {
			case h.answers > 0:
				opts.Backoff.Succeed(name)
			case h.failures > 0 || (h.asked > 0 && ctx.Err() != nil):
				d := opts.Backoff.Fail(name, h.retryAfter)
				log.Warn("backfill: the provider API gave no answer this pass; backing off", "provider", name, "for", d)
			}
		}
	}
	report = b.report
	report.Gaps = len(gaps)
	report.Requests = int(b.requests.Load())
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(b.refused)) {
		errs = append(errs, b.refused[name])
	}
	b.mu.Unlock()

	if report.Ingested > 0 {
		// One wake-up for the workers per pass, not one per event; sent even
		// when the pass was cut short, as the events are already committed.
		nctx, ncancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, err := pool.Exec(nctx, `SELECT pg_notify('webhooks_events', 'backfill')`)
		ncancel()
		if err != nil {
			log.Warn("notify webhooks_events", "error", err)
		}
	}
	if cause := context.Cause(ctx); cause != nil {
		errs = append([]error{cause}, errs...)
	}
	log.Info("backfill pass", "gaps", report.Gaps, "ingested", report.Ingested, "duplicates", report.Duplicates,
		"tombstoned", report.Tombstoned, "postponed", report.Postponed, "skipped", report.Skipped,
		"backed_off", report.BackedOff, "refused", report.Refused,
		"failed", report.Failed, "malformed", report.Malformed, "unauthorized", report.Unauthorized,
		"requests", report.Requests)
	return report, errors.Join(errs...)
}

// backfiller is the state of one pass shared by its goroutines.
type backfiller struct {
	pool     *pgxpool.Pool
	opts     Options
	log      *slog.Logger
	requests atomic.Int64

	mu       sync.Mutex
	report   Report
	limiters map[string]*limiter
	refused  map[string]*AuthError // providers that answered 401/403
	health   map[string]*providerHealth
}

// providerHealth counts, per provider in one pass, the gaps asked about,
// those answered and those that got no answer, and keeps the longest
// Retry-After the API sent (for Options.Backoff).
type providerHealth struct {
	asked, answers, failures int
	retryAfter               time.Duration
}

func (b *backfiller) touch(provider string, f func(*providerHealth)) {
	b.mu.Lock()
	h := b.health[provider]
	if h == nil {
		h = &providerHealth{}
		b.health[provider] = h
	}
	f(h)
	b.mu.Unlock()
}

func (b *backfiller) count(f func(*Report)) {
	b.mu.Lock()
	f(&b.report)
	b.mu.Unlock()
}

func (b *backfiller) limiter(provider string) *limiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.limiters[provider]
	if l == nil {
		l = &limiter{interval: time.Duration(float64(time.Second) / b.opts.Rate)}
		b.limiters[provider] = l
	}
	return l
}

func (b *backfiller) isRefused(provider string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refused[provider] != nil
}

// settle looks one gap up and acts on the answer. It returns an error only
// for a failure that should end the pass (the database).
func (b *backfiller) settle(ctx context.Context, api StatusAPI, g Gap) error {
	log := b.log.With("provider", g.Provider, "external_id", g.ExternalID)
	if b.isRefused(g.Provider) {
		b.count(func(r *Report) { r.Skipped++ })
		return nil
	}
	if err := api.Vet(g); err != nil {
		b.refuse(log, err)
		return nil
	}
	b.touch(g.Provider, func(h *providerHealth) { h.asked++ })
	res, err := b.lookup(ctx, api, g)
	var apiErr *APIError
	var malformed *MalformedError
	var refused *RefusedError
	switch {
	case err == nil:
		b.touch(g.Provider, func(h *providerHealth) { h.answers++ })
	case ctx.Err() != nil:
		return nil // the pass is ending; its cause is reported once
	case errors.As(err, &refused):
		b.touch(g.Provider, func(h *providerHealth) { h.failures++ })
		b.refuse(log, err)
		return nil
	case errors.Is(err, ErrUnauthorized):
		status := 0
		if errors.As(err, &apiErr) {
			status = apiErr.StatusCode
		}
		b.mu.Lock()
		b.report.Unauthorized++
		if b.refused[g.Provider] == nil {
			b.refused[g.Provider] = &AuthError{Provider: g.Provider, StatusCode: status}
			// Returned as an *AuthError, not logged: the caller reports it once.
			log.Debug("backfill: the provider API refused the key; skipping its other gaps this pass", "status", status)
		}
		b.mu.Unlock()
		return nil
	case errors.As(err, &malformed):
		b.touch(g.Provider, func(h *providerHealth) { h.failures++ })
		b.count(func(r *Report) { r.Malformed++ })
		log.Warn("backfill: malformed API response; nothing changed", "reason", malformed.Reason)
		return nil
	default:
		b.touch(g.Provider, func(h *providerHealth) {
			h.failures++
			if errors.As(err, &apiErr) {
				h.retryAfter = max(h.retryAfter, apiErr.RetryAfter)
			}
		})
		b.count(func(r *Report) { r.Failed++ })
		log.Warn("backfill: no answer from the provider API; nothing changed", "error", err)
		return nil
	}

	switch res.State {
	case LookupTerminal:
		outcome, err := ingestBackfill(ctx, b.pool, g, res)
		if err != nil {
			return err
		}
		b.count(func(r *Report) {
			if outcome == "created" {
				r.Ingested++
			} else {
				r.Duplicates++
			}
		})
		log.Info("backfill: ingested a terminal job", "event_type", res.EventType, "outcome", outcome)
	case LookupUnknown:
		if _, err := b.pool.Exec(ctx, `SELECT webhooks.tombstone($1, $2, 'unknown to provider')`,
			g.Provider, g.ExternalID); err != nil {
			return fmt.Errorf("backfill %s/%s: tombstone: %w", g.Provider, g.ExternalID, err)
		}
		b.count(func(r *Report) { r.Tombstoned++ })
		log.Info("backfill: tombstoned an id unknown to the provider")
	case LookupPending:
		if _, err := b.pool.Exec(ctx, `SELECT webhooks.postpone_expectation($1, $2,
				$3::bigint * interval '1 microsecond', $4::bigint * interval '1 microsecond')`,
			g.Provider, g.ExternalID, b.opts.PostponeBase.Microseconds(), b.opts.PostponeMax.Microseconds()); err != nil {
			return fmt.Errorf("backfill %s/%s: postpone: %w", g.Provider, g.ExternalID, err)
		}
		b.count(func(r *Report) { r.Postponed++ })
		log.Debug("backfill: job not finished yet; deadline postponed", "status", res.Status)
	default:
		b.count(func(r *Report) { r.Malformed++ })
		log.Warn("backfill: the API returned no state; nothing changed")
	}
	return nil
}

// refuse counts and logs a *RefusedError: nothing changes for the gap.
func (b *backfiller) refuse(log *slog.Logger, err error) {
	var r *RefusedError
	if !errors.As(err, &r) {
		return
	}
	b.mu.Lock()
	b.report.Refused++
	if b.report.RefusedBy == nil {
		b.report.RefusedBy = map[string]map[string]int{}
	}
	if b.report.RefusedBy[r.Provider] == nil {
		b.report.RefusedBy[r.Provider] = map[string]int{}
	}
	b.report.RefusedBy[r.Provider][r.Reason]++
	b.mu.Unlock()
	log.Warn("backfill: refused; the gap stays open", "reason", r.Reason, "detail", r.Detail)
}

// lookup asks api about g, retrying what may succeed later.
func (b *backfiller) lookup(ctx context.Context, api StatusAPI, g Gap) (Lookup, error) {
	lim := b.limiter(g.Provider)
	delay := b.opts.RetryBase
	for attempt := 1; ; attempt++ {
		if err := lim.wait(ctx); err != nil {
			return Lookup{}, err
		}
		actx, cancel := context.WithTimeout(ctx, b.opts.RequestTimeout)
		res, err := api.Lookup(actx, g)
		cancel()
		var refused *RefusedError
		if !errors.As(err, &refused) || refused.Reason == RefusedRedirect {
			b.requests.Add(1)
		}
		if err == nil {
			return res, nil
		}
		var apiErr *APIError
		if ctx.Err() != nil || !errors.As(err, &apiErr) || !apiErr.Retryable() || attempt >= b.opts.MaxAttempts {
			return Lookup{}, err
		}
		wait := min(delay, b.opts.RetryMax)
		if apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > b.opts.RetryMax {
				return Lookup{}, fmt.Errorf("%w (Retry-After %s is longer than the %s cap: leaving it for a later pass)",
					err, apiErr.RetryAfter, b.opts.RetryMax)
			}
			// Honour it for every request to this provider, not just this one.
			lim.holdUntil(time.Now().Add(apiErr.RetryAfter))
			wait = max(wait, apiErr.RetryAfter)
		}
		b.log.Debug("backfill: retrying", "provider", g.Provider, "external_id", g.ExternalID,
			"attempt", attempt, "in", wait, "error", err)
		if err := b.opts.sleep(ctx, wait); err != nil {
			return Lookup{}, err
		}
		delay *= 2
	}
}

// ingestBackfill stores a terminal job found by backfill under the gap's id.
func ingestBackfill(ctx context.Context, pool *pgxpool.Pool, g Gap, res Lookup) (string, error) {
	return ingestEvent(ctx, pool, g.Provider, g.ExternalID, res.EventType, res.Payload)
}

// ingestEvent stores an event found by backfill through
// webhooks.ingest_webhook (source 'backfill') under key, in a transaction of
// its own. ingest_webhook answers 'updated' when a pending row with another
// payload already holds the key: the webhook landed first, so the
// transaction is rolled back and the webhook's payload kept ('duplicate').
//
// Its commit waits for the WAL flush, locally and on the synchronous
// standbys, as the HTTP ingest's does, whatever the server, database or role
// default for synchronous_commit (see ingestEventSQL): the HTTP ingest
// answers a duplicate 2xx from a read-only transaction when there are no
// synchronous standbys, which is right only if every row it finds was
// flushed before it became visible.
func ingestEvent(ctx context.Context, pool *pgxpool.Pool, provider, key, eventType string, payload json.RawMessage) (string, error) {
	var outcome string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, ingestEventSQL, provider, key, eventType, string(payload)).Scan(&outcome)
		if err != nil {
			return err
		}
		if outcome == "updated" {
			return errWebhookWon
		}
		return nil
	})
	if errors.Is(err, errWebhookWon) {
		return "duplicate", nil
	}
	if err != nil {
		return "", fmt.Errorf("backfill %s/%s: ingest: %w", provider, key, err)
	}
	return outcome, nil
}

var errWebhookWon = errors.New("the webhook landed first")

// ingestEventSQL is backfill's ingest statement. set_config(..., true)
// raises synchronous_commit for this transaction only, to on, or keeps
// remote_apply (stricter) when that is the default: the rule of the HTTP
// ingest's statement (package ingest). The setting is read at commit.
const ingestEventSQL = `SELECT outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb, source => 'backfill')
	WHERE set_config('synchronous_commit', CASE current_setting('synchronous_commit')
		WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END, true) IS NOT NULL`

// limiter spaces requests to one provider at least interval apart
// and can be held back until a time (a Retry-After).
type limiter struct {
	mu       sync.Mutex
	interval time.Duration
	next     time.Time
}

// wait blocks until the caller's turn.
func (l *limiter) wait(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	at := l.next
	if at.Before(now) {
		at = now
	}
	l.next = at.Add(l.interval)
	l.mu.Unlock()
	return sleep(ctx, time.Until(at))
}

// holdUntil lets no request through before t.
func (l *limiter) holdUntil(t time.Time) {
	l.mu.Lock()
	if l.next.Before(t) {
		l.next = t
	}
	l.mu.Unlock()
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
