package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Gap is an expected event that did not arrive by its deadline: one row of
// webhooks.find_gaps().
type Gap struct {
	Provider   string    `json:"provider"`
	ExternalID string    `json:"external_id"`
	StatusURL  string    `json:"status_url,omitempty"`
	Deadline   time.Time `json:"deadline"`
}

// LookupState is what a provider's API said about a gap.
type LookupState int

const (
	// LookupPending means the provider knows the id and it is not finished
	// yet: backfill postpones the expectation's deadline.
	LookupPending LookupState = iota + 1
	// LookupTerminal means the provider reports a final state: backfill
	// ingests it as the event a webhook would have delivered.
	LookupTerminal
	// LookupUnknown means the provider does not know the id (Sume: 404):
	// backfill tombstones it.
	LookupUnknown
)

// String returns "pending", "terminal" or "unknown".
func (s LookupState) String() string {
	switch s {
	case LookupPending:
		return "pending"
	case LookupTerminal:
		return "terminal"
	case LookupUnknown:
		return "unknown"
	}
	return fmt.Sprintf("LookupState(%d)", int(s))
}

// Lookup is a provider API's definite answer about one gap.
type Lookup struct {
	State LookupState
	// EventType is the event a webhook would have carried (LookupTerminal only).
	EventType string
	// Status is the provider's own status word, as reported (e.g. "IN_PROGRESS").
	Status string
	// Payload is the provider's response, a JSON object Postgres jsonb
	// accepts; it becomes the event's payload (LookupTerminal only).
	Payload json.RawMessage
}

// StatusAPI asks one provider's API about a gap. Adding a provider is one
// backfill_<provider>.go file implementing it.
//
// Lookup returns a *Lookup for a definite answer only. Everything else is an
// error: an *APIError for an HTTP status that is not an answer or a transport
// failure (Backfill retries those whose Retryable is true), a *MalformedError
// for a response it cannot read, ErrNoEndpoint when there is nowhere to ask.
// ctx carries the per-request timeout.
type StatusAPI interface {
	Lookup(ctx context.Context, gap Gap) (Lookup, error)
}

// AnyProvider is the key of the fallback entry in a map of StatusAPIs: it
// serves the gaps of providers that have no entry of their own (see
// [StatusAPIsFromEnv]). A provider mapped to a nil StatusAPI has no API and
// never falls back.
const AnyProvider = "*"

// ErrNoEndpoint means a gap cannot be looked up: the provider has no API URL
// and the expectation no status_url. Backfill counts such gaps as skipped.
var ErrNoEndpoint = errors.New("no API URL for the provider and no status_url for the expectation")

// ErrUnauthorized is matched (errors.Is) by an *APIError for 401 or 403.
var ErrUnauthorized = errors.New("the provider refused the API key")

// APIError is a provider API call that gave no answer: an HTTP status other
// than the API's definite answers, or a transport failure (StatusCode 0).
type APIError struct {
	Provider   string
	ExternalID string
	// StatusCode is the HTTP status, 0 when no response arrived.
	StatusCode int
	// RetryAfter is the response's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// Timeout reports that the request timed out.
	Timeout bool
	// Err is the transport error, nil when a response arrived.
	Err error
}

// Error names the provider, the id and what went wrong; never the API key.
func (e *APIError) Error() string {
	switch {
	case e.StatusCode != 0:
		return fmt.Sprintf("%s API: %s: HTTP %d", e.Provider, e.ExternalID, e.StatusCode)
	case e.Timeout:
		return fmt.Sprintf("%s API: %s: timed out", e.Provider, e.ExternalID)
	default:
		return fmt.Sprintf("%s API: %s: %v", e.Provider, e.ExternalID, e.Err)
	}
}

// Unwrap returns the transport error.
func (e *APIError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnauthorized and the status is 401 or 403.
func (e *APIError) Is(target error) bool {
	return target == ErrUnauthorized && (e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden)
}

// Retryable reports whether asking again may get an answer: a 5xx, 429 or
// 408, a timeout or another transport failure.
func (e *APIError) Retryable() bool {
	switch {
	case e.StatusCode == 0:
		return true
	case e.StatusCode >= 500, e.StatusCode == http.StatusTooManyRequests, e.StatusCode == http.StatusRequestTimeout:
		return true
	}
	return false
}

// MalformedError is a response that is not a usable answer: not a JSON
// object, no status, an id other than the one asked about. Backfill logs and
// counts it and changes nothing: it never guesses.
type MalformedError struct {
	Provider   string
	ExternalID string
	Reason     string
}

// Error names the provider, the id and the reason.
func (e *MalformedError) Error() string {
	return fmt.Sprintf("%s API: %s: malformed response: %s", e.Provider, e.ExternalID, e.Reason)
}

// AuthError is returned by Backfill when a provider refused the API key
// (401 or 403): that provider's remaining gaps were not looked up and nothing
// of it was tombstoned.
type AuthError struct {
	Provider   string
	StatusCode int
}

// Error names the provider and the status.
func (e *AuthError) Error() string {
	return fmt.Sprintf("backfill %s: the API refused the key (HTTP %d): check PGINBOX_API_KEY_%s",
		e.Provider, e.StatusCode, EnvName(e.Provider))
}

// Is lets errors.Is(err, ErrUnauthorized) match.
func (e *AuthError) Is(target error) bool { return target == ErrUnauthorized }

// BackfillOptions tunes a backfill pass. Zero values mean the defaults.
type BackfillOptions struct {
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
	// Logger receives one line per gap that could not be settled and one per
	// pass. Nil means slog.Default().
	Logger *slog.Logger

	// sleep waits between attempts; tests replace it. Nil means a timer.
	sleep func(ctx context.Context, d time.Duration) error
}

func (o BackfillOptions) withDefaults() BackfillOptions {
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
	def(&o.PostponeBase, time.Minute)
	def(&o.PostponeMax, time.Hour)
	if o.PostponeMax < o.PostponeBase {
		o.PostponeMax = o.PostponeBase
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.sleep == nil {
		o.sleep = backfillSleep
	}
	return o
}

// BackfillReport counts what one backfill pass did.
type BackfillReport struct {
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
	// Skipped counts gaps with no API to ask (no API for the provider, no
	// URL, or the provider refused the key earlier in the pass).
	Skipped int `json:"skipped"`
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

// FindGaps returns up to limit gaps (webhooks.find_gaps), oldest deadline
// first, of one provider or, when provider is empty, of all. limit <= 0
// means no limit.
func FindGaps(ctx context.Context, pool *pgxpool.Pool, provider string, limit int) ([]Gap, error) {
	var p *string
	if provider != "" {
		p = &provider
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := pool.Query(ctx, `
		SELECT g.provider, g.external_id, coalesce(g.status_url, ''), g.deadline
		FROM webhooks.find_gaps($1) AS g
		LIMIT $2`, p, lim)
	if err != nil {
		return nil, fmt.Errorf("find gaps: %w", err)
	}
	gaps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Gap])
	if err != nil {
		return nil, fmt.Errorf("find gaps: %w", err)
	}
	return gaps, nil
}

// Backfill runs one backfill pass: it asks each gap's provider API
// (apis[provider], else apis[AnyProvider]) what became of the id, and
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
//     tombstoned and Backfill returns an *AuthError;
//   - a malformed response is logged and counted; nothing changes.
//
// Lookups run at most Concurrency at a time and at most Rate per second per
// provider. Backfill returns early with an error when ctx ends or the
// database fails; the report then counts what was done.
func Backfill(ctx context.Context, pool *pgxpool.Pool, apis map[string]StatusAPI, opts BackfillOptions) (BackfillReport, error) {
	opts = opts.withDefaults()
	log := opts.Logger.With("component", "backfill")
	var report BackfillReport

	gaps, err := FindGaps(ctx, pool, opts.Provider, opts.MaxGaps)
	if err != nil {
		return report, err
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
		limiters: map[string]*backfillLimiter{},
		refused:  map[string]*AuthError{},
	}
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for _, g := range gaps {
		api, ok := apis[g.Provider]
		if !ok {
			api = apis[AnyProvider]
		}
		if api == nil {
			b.count(func(r *BackfillReport) { r.Skipped++ })
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
		"failed", report.Failed, "malformed", report.Malformed, "unauthorized", report.Unauthorized,
		"requests", report.Requests)
	return report, errors.Join(errs...)
}

// backfiller is the state of one Backfill pass shared by its goroutines.
type backfiller struct {
	pool     *pgxpool.Pool
	opts     BackfillOptions
	log      *slog.Logger
	requests atomic.Int64

	mu       sync.Mutex
	report   BackfillReport
	limiters map[string]*backfillLimiter
	refused  map[string]*AuthError // providers that answered 401/403
}

func (b *backfiller) count(f func(*BackfillReport)) {
	b.mu.Lock()
	f(&b.report)
	b.mu.Unlock()
}

func (b *backfiller) limiter(provider string) *backfillLimiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.limiters[provider]
	if l == nil {
		l = &backfillLimiter{interval: time.Duration(float64(time.Second) / b.opts.Rate)}
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
		b.count(func(r *BackfillReport) { r.Skipped++ })
		return nil
	}
	res, err := b.lookup(ctx, api, g)
	var apiErr *APIError
	var malformed *MalformedError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil // the pass is ending; its cause is reported once
	case errors.Is(err, ErrNoEndpoint):
		b.count(func(r *BackfillReport) { r.Skipped++ })
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
		b.count(func(r *BackfillReport) { r.Malformed++ })
		log.Warn("backfill: malformed API response; nothing changed", "reason", malformed.Reason)
		return nil
	default:
		b.count(func(r *BackfillReport) { r.Failed++ })
		log.Warn("backfill: no answer from the provider API; nothing changed", "error", err)
		return nil
	}

	switch res.State {
	case LookupTerminal:
		outcome, err := ingestBackfill(ctx, b.pool, g, res)
		if err != nil {
			return err
		}
		b.count(func(r *BackfillReport) {
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
		b.count(func(r *BackfillReport) { r.Tombstoned++ })
		log.Info("backfill: tombstoned an id unknown to the provider")
	case LookupPending:
		if _, err := b.pool.Exec(ctx, `SELECT webhooks.postpone_expectation($1, $2,
				$3::bigint * interval '1 microsecond', $4::bigint * interval '1 microsecond')`,
			g.Provider, g.ExternalID, b.opts.PostponeBase.Microseconds(), b.opts.PostponeMax.Microseconds()); err != nil {
			return fmt.Errorf("backfill %s/%s: postpone: %w", g.Provider, g.ExternalID, err)
		}
		b.count(func(r *BackfillReport) { r.Postponed++ })
		log.Debug("backfill: job not finished yet; deadline postponed", "status", res.Status)
	default:
		b.count(func(r *BackfillReport) { r.Malformed++ })
		log.Warn("backfill: the API returned no state; nothing changed")
	}
	return nil
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
		if !errors.Is(err, ErrNoEndpoint) {
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

// ingestBackfill stores a terminal job found by backfill through
// webhooks.ingest_webhook under the gap's id, in a transaction of its own.
// ingest_webhook answers 'updated' when a pending row with another payload
// already holds the key: the webhook landed first, so the transaction is
// rolled back and the webhook's payload kept ('duplicate').
func ingestBackfill(ctx context.Context, pool *pgxpool.Pool, g Gap, res Lookup) (string, error) {
	var outcome string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			SELECT outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb, source => 'backfill')`,
			g.Provider, g.ExternalID, res.EventType, string(res.Payload)).Scan(&outcome)
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
		return "", fmt.Errorf("backfill %s/%s: ingest: %w", g.Provider, g.ExternalID, err)
	}
	return outcome, nil
}

var errWebhookWon = errors.New("the webhook landed first")

// backfillLimiter spaces requests to one provider at least interval apart
// and can be held back until a time (a Retry-After).
type backfillLimiter struct {
	mu       sync.Mutex
	interval time.Duration
	next     time.Time
}

// wait blocks until the caller's turn.
func (l *backfillLimiter) wait(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	at := l.next
	if at.Before(now) {
		at = now
	}
	l.next = at.Add(l.interval)
	l.mu.Unlock()
	return backfillSleep(ctx, time.Until(at))
}

// holdUntil lets no request through before t.
func (l *backfillLimiter) holdUntil(t time.Time) {
	l.mu.Lock()
	if l.next.Before(t) {
		l.next = t
	}
	l.mu.Unlock()
}

// backfillSleep waits d or until ctx ends.
func backfillSleep(ctx context.Context, d time.Duration) error {
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

// StatusAPIsFromEnv builds the status APIs backfill uses, from the
// environment (contract §4) and the configured providers (name → kind, as in
// PGINBOX_PROVIDERS):
//
//   - a provider of kind sume gets a [SumeAPI] with PGINBOX_API_URL_<NAME>
//     and PGINBOX_API_KEY_<NAME> (<NAME> from [EnvName]). Without a URL it
//     still looks up expectations that carry a status_url (the poll
//     fallback), and skips the others;
//   - a provider of another kind has no status API yet: it is mapped to nil
//     (its gaps are listed, never looked up), and setting
//     PGINBOX_API_URL_<NAME> for it is an error rather than a silent no-op;
//   - the entry [AnyProvider] serves providers that are not configured at all
//     (no webhook mode, no kind known): it treats them as Sume-style APIs,
//     reading their PGINBOX_API_URL_<NAME> and PGINBOX_API_KEY_<NAME> when it
//     first meets them, so an expectation with a status_url is polled even
//     when no webhook for its provider is configured.
//
// client makes the requests; nil means http.DefaultClient (backfill bounds
// each request with BackfillOptions.RequestTimeout).
func StatusAPIsFromEnv(getenv func(string) string, providers map[string]string, client *http.Client) (map[string]StatusAPI, error) {
	apis := map[string]StatusAPI{}
	for _, name := range slices.Sorted(maps.Keys(providers)) {
		kind := providers[name]
		urlVar := "PGINBOX_API_URL_" + EnvName(name)
		base, key := getenv(urlVar), getenv("PGINBOX_API_KEY_"+EnvName(name))
		switch kind {
		case "sume":
			api, err := NewSumeAPI(name, base, key, client)
			if err != nil {
				return nil, &ConfigError{Var: urlVar, Msg: err.Error()}
			}
			apis[name] = api
		default:
			if base != "" {
				return nil, &ConfigError{Var: urlVar, Msg: fmt.Sprintf(
					"provider %q is of kind %q, which has no status API for backfill yet (supported: sume); unset it", name, kind)}
			}
			apis[name] = nil
		}
	}
	apis[AnyProvider] = &envStatusAPI{getenv: getenv, client: client, apis: map[string]StatusAPI{}}
	return apis, nil
}

// envStatusAPI is the AnyProvider fallback of StatusAPIsFromEnv: a Sume-style
// API per provider, configured from the environment on first use.
type envStatusAPI struct {
	getenv func(string) string
	client *http.Client

	mu   sync.Mutex
	apis map[string]StatusAPI
}

// Lookup asks the provider's Sume-style API.
func (e *envStatusAPI) Lookup(ctx context.Context, gap Gap) (Lookup, error) {
	e.mu.Lock()
	api, ok := e.apis[gap.Provider]
	if !ok {
		urlVar := "PGINBOX_API_URL_" + EnvName(gap.Provider)
		s, err := NewSumeAPI(gap.Provider, e.getenv(urlVar), e.getenv("PGINBOX_API_KEY_"+EnvName(gap.Provider)), e.client)
		if err != nil {
			err = &ConfigError{Var: urlVar, Msg: err.Error()}
			api = badStatusAPI{err}
		} else {
			api = s
		}
		e.apis[gap.Provider] = api
	}
	e.mu.Unlock()
	return api.Lookup(ctx, gap)
}

// badStatusAPI answers every lookup with a configuration error.
type badStatusAPI struct{ err error }

func (b badStatusAPI) Lookup(context.Context, Gap) (Lookup, error) { return Lookup{}, b.err }
