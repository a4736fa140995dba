package backfill

import (
	"sync"
	"time"
)

// Backoff remembers, across passes, the providers whose API keeps failing,
// so that a hung or hostile API costs one bounded attempt per backoff period
// instead of a full pass every time, and so that recovery starts as soon as
// the API answers again rather than when the backoff runs out:
//
//   - a pass in which a provider's API gave no answer ([Backoff.Fail])
//     skips the provider's full passes for Base, doubling with each failing
//     pass up to Max, and never less than the Retry-After the API sent;
//   - meanwhile a cheap probe ([Backoff.Probe]: one request, no retry) asks
//     the API whether it answers. A probe that gets an answer after the API
//     was seen failing ends the backoff at once ([Backoff.Probed] reports
//     true: the caller starts a full pass). No probe goes out before a
//     Retry-After has passed;
//   - a pass that a probe started and that fails again does not let the next
//     answering probe end the backoff: a probe must fail first (the API went
//     down again) or the backoff run its course, so an API that answers the
//     probe but fails the pass is never asked for a full pass at every probe;
//   - the first pass that gets an answer ([Backoff.Succeed]) forgets it all.
//
// It is safe for concurrent use.
type Backoff struct {
	Base, Max time.Duration

	mu    sync.Mutex
	state map[string]*backoffState
	now   func() time.Time
}

type backoffState struct {
	failures int
	// until is when a full pass may ask the provider again; notBefore when
	// any request may (a Retry-After).
	until, notBefore time.Time
	// armed: a probe that gets an answer ends the backoff. early: the
	// backoff was ended by a probe, so a failing pass leaves it unarmed.
	armed, early bool
}

// NewBackoff returns a Backoff from base up to most (defaults 1m and 30m).
func NewBackoff(base, most time.Duration) *Backoff {
	if base <= 0 {
		base = time.Minute
	}
	if most <= 0 {
		most = 30 * time.Minute
	}
	most = max(most, base)
	return &Backoff{Base: base, Max: most, state: map[string]*backoffState{}, now: time.Now}
}

// Until returns when provider may be asked again by a full pass (zero: now).
func (b *Backoff) Until(provider string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.state[provider]; s != nil {
		return s.until
	}
	return time.Time{}
}

// Fail records a pass in which provider's API gave no answer, retryAfter
// being the longest Retry-After it sent (0: none), and returns the backoff
// that starts now.
func (b *Backoff) Fail(provider string, retryAfter time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state[provider]
	if s == nil {
		s = &backoffState{}
		b.state[provider] = s
	}
	s.failures++
	d := b.Base
	for i := 1; i < s.failures && d < b.Max; i++ {
		d *= 2
	}
	d = max(min(d, b.Max), retryAfter)
	now := b.now()
	s.until = now.Add(d)
	if retryAfter > 0 {
		s.notBefore = now.Add(retryAfter)
	}
	s.armed = !s.early
	s.early = false
	return d
}

// Succeed records an answer: provider is asked again at once.
func (b *Backoff) Succeed(provider string) {
	b.mu.Lock()
	delete(b.state, provider)
	b.mu.Unlock()
}

// Due returns the providers to probe now: backed off, with no Retry-After
// still running.
func (b *Backoff) Due() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	var due []string
	for name, s := range b.state {
		if s.until.After(now) && !s.notBefore.After(now) {
			due = append(due, name)
		}
	}
	return due
}

// Probed records what a probe of provider got: answered, or not (with the
// Retry-After it carried, 0: none). It reports whether the answer ended the
// backoff, so that the caller starts a full pass now.
func (b *Backoff) Probed(provider string, answered bool, retryAfter time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state[provider]
	if s == nil {
		return false
	}
	now := b.now()
	if !answered {
		s.armed = true // the API was seen down: the next answer is news
		if retryAfter > 0 {
			s.notBefore = maxTime(s.notBefore, now.Add(retryAfter))
			s.until = maxTime(s.until, s.notBefore)
		}
		return false
	}
	if !s.armed || !s.until.After(now) || s.notBefore.After(now) {
		return false
	}
	s.until, s.armed, s.early = time.Time{}, false, true
	return true
}

// fail records a failing pass without a Retry-After.
func (b *Backoff) fail(provider string) time.Duration { return b.Fail(provider, 0) }
