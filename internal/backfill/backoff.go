package backfill

import (
	"sync"
	"time"
)

// Backoff remembers, across passes, the providers whose API keeps failing,
// so that a hung or hostile API costs one bounded attempt per backoff period
// instead of a full pass every time. The period doubles with each failing
// pass, from Base up to Max, and ends with the first pass that gets an answer.
// It is safe for concurrent use.
type Backoff struct {
	Base, Max time.Duration

	mu    sync.Mutex
	state map[string]*backoffState
	now   func() time.Time
}

type backoffState struct {
	failures int
	until    time.Time
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

// Until returns when provider may be asked again (zero: now).
func (b *Backoff) Until(provider string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.state[provider]; s != nil {
		return s.until
	}
	return time.Time{}
}

// Fail records a pass in which provider's API gave no answer and returns
// the backoff that starts now.
func (b *Backoff) Fail(provider string) time.Duration { return b.fail(provider) }

// Succeed records an answer: provider is asked again at once.
func (b *Backoff) Succeed(provider string) { b.succeed(provider) }

func (b *Backoff) fail(provider string) time.Duration {
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
	d = min(d, b.Max)
	s.until = b.now().Add(d)
	return d
}

// succeed forgets provider's failures.
func (b *Backoff) succeed(provider string) {
	b.mu.Lock()
	delete(b.state, provider)
	b.mu.Unlock()
}
