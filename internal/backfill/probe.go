package backfill

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/provider/api"
)

// Prober is an [EventLog] that can ask cheaply whether its API answers
// ([api.Prober]).
type Prober = api.Prober

// probeGaps is how many of a provider's oldest gaps a status-API probe looks
// at for one it may ask about (a status_url on another origin is never asked).
const probeGaps = 20

// Probe asks, once, each provider b is backing off whose Retry-After has
// passed ([Backoff.Due]) whether its API answers again: one request per
// provider, never retried, bounded by opts.RequestTimeout, the providers
// concurrently. An event log is asked for its newest entry ([Prober], else
// its first page); a status API about the oldest gap it may ask about (a
// provider without one has nothing a pass could ask, and is not probed).
// Each result goes to [Backoff.Probed]; Probe returns, sorted, the
// providers whose backoff an answer ended: the caller starts a full pass.
// The answer itself is not used (the pass that follows reads it again).
func (b *Backoff) Probe(ctx context.Context, pool *pgxpool.Pool, apis map[string]StatusAPI, logs map[string]EventLog, opts Options) []string {
	opts = opts.withDefaults()
	log := opts.Logger.With("component", "backfill")
	var (
		mu    sync.Mutex
		ended []string
		wg    sync.WaitGroup
	)
	for _, name := range b.Due() {
		el, api := logs[name], apis[name]
		if el == nil && api == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			asked, err := probeOne(ctx, pool, name, el, api, opts)
			if !asked || ctx.Err() != nil {
				return
			}
			var apiErr *APIError
			var retryAfter time.Duration
			answered := err == nil
			if errors.As(err, &apiErr) {
				retryAfter = apiErr.RetryAfter
				answered = !apiErr.Retryable()
			}
			if !b.Probed(name, answered, retryAfter) {
				log.Debug("backfill: probed a provider API being backed off", "provider", name, "answered", answered, "error", err)
				return
			}
			log.Info("backfill: the provider API answers again; the backoff ends and a pass starts now", "provider", name)
			mu.Lock()
			ended = append(ended, name)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(ended)
	return ended
}

// probeOne makes provider's one probe request; asked is false when there
// was nothing to ask (no gap a pass could ask about) or the database failed.
func probeOne(ctx context.Context, pool *pgxpool.Pool, provider string, el EventLog, api StatusAPI, opts Options) (asked bool, err error) {
	if el != nil {
		rctx, cancel := context.WithTimeout(ctx, opts.RequestTimeout)
		defer cancel()
		if p, ok := el.(Prober); ok {
			return true, p.Probe(rctx)
		}
		_, err := el.Page(rctx, opts.now(), "")
		return true, err
	}
	gaps, err := FindGaps(ctx, pool, provider, probeGaps)
	if err != nil {
		opts.Logger.Warn("backfill: probe: read the gaps", "provider", provider, "error", err)
		return false, err
	}
	for _, g := range gaps {
		if api.Vet(g) != nil {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, opts.RequestTimeout)
		defer cancel()
		_, err := api.Lookup(rctx, g)
		return true, err
	}
	return false, nil
}

// ProbeEvery is how often a runner probes the providers it is backing off,
// given its pass interval: the pass interval, at most 10 s, at least 100 ms.
// A provider whose API answers again is then read within one probe interval
// plus one pass.
func ProbeEvery(pass time.Duration) time.Duration {
	if pass <= 0 {
		return 10 * time.Second
	}
	return max(min(pass, 10*time.Second), 100*time.Millisecond)
}
