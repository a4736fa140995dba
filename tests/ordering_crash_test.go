package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOrderingCrashOutsideEffects: a handler whose effect lies outside the
// database — an http: handler, and a Go handler in a program that embeds
// the runner — works through 30 customers x 10 ordered events while the
// runner is killed with SIGKILL three times, each time in the middle of a
// call to the outside receiver. The receiver records every call it gets,
// per customer, in the order they arrive. Each customer's calls start at
// seq 1 and never go back: a call is of the seq after the previous call's
// (it completed) or of the same seq again (a redelivery of the call a crash
// cut short, or whose completion had not committed) — never of an earlier
// one, which would mean an event started before its predecessor's
// completion committed, and the outside system saw seq 2 and then seq 1
// again. Every kill redelivers at least the call it cut short. In both
// lease modes (an http: handler always takes the two-phase lease; a Go
// handler takes the row lock under row-lock).
func TestOrderingCrashOutsideEffects(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test: skipped with -short")
	}
	for _, handler := range []string{"http", "go"} {
		for _, lease := range []string{"row-lock", "two-phase"} {
			t.Run(handler+" "+lease, func(t *testing.T) {
				t.Parallel()
				orderingCrash(t, handler, lease)
			})
		}
	}
}

// receivedCall is one call the outside receiver got.
type receivedCall struct {
	seq, attempt int
	eventID      int64
}

func orderingCrash(t *testing.T, handler, lease string) {
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 6)
	setupOrdered(t, pool, "stripe")
	const keys, perKey = 30, 10
	evs := orderedEvents(keys, perKey, 0)
	ingestOrdered(t, pool, "stripe", evs, 4, "")

	// The receiver: records each call as it arrives, then takes 20 ms to
	// answer. At the calls numbered in killAt it has the runner killed
	// while it holds the call.
	killAt := map[int64]bool{40: true, 120: true, 200: true}
	kill := make(chan chan struct{}) // the receiver asks for a kill; closed once done
	var mu sync.Mutex
	calls := map[string][]receivedCall{}
	var n atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID      int64 `json:"id"`
			Attempt int   `json:"attempt"`
			Payload struct {
				Seq  int `json:"seq"`
				Data struct {
					Object struct {
						Customer string `json:"customer"`
					} `json:"object"`
				} `json:"data"`
			} `json:"payload"`
		}
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil || ev.Payload.Data.Object.Customer == "" {
			http.Error(w, fmt.Sprintf("not an ordered event: %v", err), http.StatusBadRequest)
			return
		}
		mu.Lock()
		k := ev.Payload.Data.Object.Customer
		calls[k] = append(calls[k], receivedCall{seq: ev.Payload.Seq, attempt: ev.Attempt, eventID: ev.ID})
		mu.Unlock()
		if killAt[n.Add(1)] {
			done := make(chan struct{})
			select {
			case kill <- done:
				<-done
				return // to a runner that is gone
			case <-time.After(30 * time.Second):
			}
		}
		time.Sleep(20 * time.Millisecond)
	}))
	t.Cleanup(receiver.Close)

	env := map[string]string{
		"DATABASE_URL":            conf.URL(),
		"PGINBOX_LEASE_MODE":      lease,
		"PGINBOX_WORKERS":         "4",
		"PGINBOX_BATCH":           "10",
		"PGINBOX_LEASE":           "2s",
		"PGINBOX_RECONCILE_EVERY": "500ms",
		"PGINBOX_POLL_INTERVAL":   "100ms",
		"PGINBOX_LOG_LEVEL":       "error",
	}
	start := func() *runnerProc { return startRunner(t, env) }
	if handler == "http" {
		env["PGINBOX_HANDLER"] = "http:" + receiver.URL
	} else {
		env["GOHANDLER_URL"] = receiver.URL
		bin := goHandlerBinary(t)
		start = func() *runnerProc { return startProgram(t, env, bin) }
	}
	current := start()
	for kills := range len(killAt) {
		var done chan struct{}
		select {
		case done = <-kill:
		case <-time.After(60 * time.Second):
			t.Fatalf("kill %d: the receiver got only %d calls in 60 s", kills+1, n.Load())
		}
		current.Kill()
		close(done)
		t.Logf("kill %d: %d of %d events processed", kills+1,
			queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`), len(evs))
		current = start()
	}
	waitFor(t, 90*time.Second, "every event processed after the kills", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) == int64(len(evs))
	})
	if err := current.Terminate(30 * time.Second); err != nil {
		t.Fatalf("graceful stop of the last runner: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(calls) != keys {
		t.Fatalf("the receiver saw %d customers, want %d", len(calls), keys)
	}
	redelivered := 0
	for k, cs := range calls {
		trace := make([]string, len(cs))
		for i, c := range cs {
			trace[i] = fmt.Sprintf("%d(attempt %d)", c.seq, c.attempt)
		}
		prev := 0
		for i, c := range cs {
			switch {
			case c.seq == prev+1:
			case c.seq == prev && i > 0:
				redelivered++
			default:
				t.Errorf("customer %s: call %d is of seq %d after seq %d: %s", k, i+1, c.seq, prev, strings.Join(trace, " "))
			}
			prev = c.seq
		}
		if prev != perKey {
			t.Errorf("customer %s: the last call is of seq %d, want %d: %s", k, prev, perKey, strings.Join(trace, " "))
		}
	}
	t.Logf("%d calls for %d events: %d redeliveries, each of the seq just called", n.Load(), len(evs), redelivered)
	if redelivered < len(killAt) {
		t.Errorf("%d redeliveries after %d kills, each in the middle of a call: every cut call must run again", redelivered, len(killAt))
	}
}

var (
	goHandlerOnce sync.Once
	goHandlerPath string
	goHandlerErr  error
)

// goHandlerBinary builds tests/cmd/gohandler (a runner embedding pginbox
// with a Go handler that POSTs each event to $GOHANDLER_URL) once per test
// binary.
func goHandlerBinary(t *testing.T) string {
	t.Helper()
	goHandlerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pginbox-gohandler-")
		if err != nil {
			goHandlerErr = err
			return
		}
		goHandlerPath = filepath.Join(dir, "gohandler")
		out, err := exec.Command("go", "build", "-o", goHandlerPath, "github.com/pginbox/pginbox/tests/cmd/gohandler").CombinedOutput()
		if err != nil {
			goHandlerErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if goHandlerErr != nil {
		t.Fatal(goHandlerErr)
	}
	return goHandlerPath
}
