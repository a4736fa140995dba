package main

import (
	"container/heap"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// splitmix64 is a bijection on uint64: distinct inputs give distinct,
// random-looking outputs. Keys built from it are unique and arrive in random
// order in the unique index, like real provider ids.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// eventKey is the provider's id of event i in a key space.
func eventKey(space string, i int64) string {
	var b strings.Builder
	b.Grow(len(space) + 21)
	b.WriteString(space)
	b.WriteString("_")
	h := strconv.FormatUint(splitmix64(uint64(i)), 16)
	for n := len(h); n < 16; n++ {
		b.WriteByte('0')
	}
	b.WriteString(h)
	return b.String()
}

// padding makes a payload about the size of a real Sume job webhook (~800 B).
var padding = strings.Repeat("lorem ipsum dolor sit amet ", 20)[:480]

// sumePayload is the body of a Sume job webhook for key: the same bytes on
// every delivery of the event, as Sume redelivers it.
func sumePayload(key string) string {
	var b strings.Builder
	b.Grow(900)
	b.WriteString(`{"event":"job.completed","job_id":"`)
	b.WriteString(key)
	b.WriteString(`","status":"COMPLETED","created_at":"2025-06-01T12:00:00Z","data":{"format":"pdf","pages":12,"output_url":"https://files.sume.example/out/`)
	b.WriteString(key)
	b.WriteString(`.pdf","meta":{"attempt":1,"note":"`)
	b.WriteString(padding)
	b.WriteString(`"}}}`)
	return b.String()
}

// storm maps delivery positions to events for the duplicate storm: every
// event is delivered `copies` times, and within each window of `width`
// events the deliveries come in a shuffled order, so copies of one event
// are in flight at the same time on different connections and arrive out of
// order. The mapping is deterministic: the ingest and the plain-insert runs
// see the same sequence.
type storm struct {
	width, copies int
	perm          []int
}

func newStorm(width, copies int) storm {
	r := rand.New(rand.NewPCG(42, 7))
	return storm{width: width, copies: copies, perm: r.Perm(width * copies)}
}

func (s storm) event(pos int64) int64 {
	n := int64(s.width * s.copies)
	w := pos / n
	return w*int64(s.width) + int64(s.perm[pos%n]/s.copies)
}

// httpSchedule hands out the deliveries of the HTTP scenario: every event is
// delivered `attempts` times — twice at once (concurrent duplicates), then
// later, then much later — interleaved with newer events, plus a share of
// forged deliveries. It is safe for concurrent use.
type httpSchedule struct {
	mu       sync.Mutex
	rng      *rand.Rand
	next     int64 // next new event
	slot     int64 // current position, in events
	pending  attemptHeap
	stopNew  bool
	rejected float64 // share of forged deliveries
	forged   int64
	// late offsets (in events) of the third, fourth and fifth delivery
	late [3][2]int64
}

type attempt struct {
	at     int64 // slot
	event  int64
	n      int // 1-based attempt number
	forged bool
}

type attemptHeap []attempt

func (h attemptHeap) Len() int           { return len(h) }
func (h attemptHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h attemptHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *attemptHeap) Push(x any)        { *h = append(*h, x.(attempt)) }
func (h *attemptHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// newHTTPSchedule: share is the fraction of all requests that are forged.
// A forged delivery is one request and a real event five, so each new
// decision forges with probability 5s / (1 + 4s).
func newHTTPSchedule(share float64, late [3][2]int64) *httpSchedule {
	return &httpSchedule{rng: rand.New(rand.NewPCG(1, 2)), rejected: 5 * share / (1 + 4*share), late: late}
}

// Next returns the next delivery, or false when there is none left (after
// StopNew, once the late deliveries of the events already started are out).
func (s *httpSchedule) Next() (attempt, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 && (s.pending[0].at <= s.slot || s.stopNew) {
		return heap.Pop(&s.pending).(attempt), true
	}
	if s.stopNew {
		return attempt{}, false
	}
	if s.rng.Float64() < s.rejected {
		s.forged++
		return attempt{event: s.forged, n: 1, forged: true}, true
	}
	// Start a new event: its first two deliveries go out now, back to
	// back (two connections send them concurrently), the others later.
	e := s.next
	s.next++
	s.slot++
	heap.Push(&s.pending, attempt{at: s.slot, event: e, n: 2})
	for i, l := range s.late {
		heap.Push(&s.pending, attempt{at: s.slot + l[0] + s.rng.Int64N(l[1]-l[0]+1), event: e, n: 3 + i})
	}
	return attempt{at: s.slot, event: e, n: 1}, true
}

// StopNew starts no new event; the remaining deliveries of started events
// are still handed out.
func (s *httpSchedule) StopNew() {
	s.mu.Lock()
	s.stopNew = true
	s.mu.Unlock()
}
