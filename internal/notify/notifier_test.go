package notify_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/notify"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestNotifierCoalesces: 300 signals over 1.5 s become at most one NOTIFY
// webhooks_events per interval (300 ms), the first at once, each at least
// an interval after the one before; a signal after a quiet spell is sent
// too; the metric counts what was sent.
func TestNotifierCoalesces(t *testing.T) {
	t.Parallel()
	const interval = 300 * time.Millisecond
	cfg := pgtest.NewConfig(t)
	pool := pgtest.PoolFor(t, cfg.URL(), 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	listen, err := pgx.Connect(ctx, cfg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = listen.Close(context.Background()) }()
	if _, err := listen.Exec(ctx, `LISTEN webhooks_events`); err != nil {
		t.Fatal(err)
	}

	m := metrics.New(pool)
	n := notify.NewNotifier(pool, interval, m, slog.New(slog.DiscardHandler))
	go n.Run(ctx)

	start := time.Now()
	go func() {
		for i := 0; i < 300 && ctx.Err() == nil; i++ {
			n.Signal()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var got []time.Duration
	for {
		wctx, wcancel := context.WithTimeout(ctx, 2*interval+100*time.Millisecond)
		_, err := listen.WaitForNotification(wctx)
		wcancel()
		if err != nil {
			break // quiet for two intervals: the burst is over
		}
		got = append(got, time.Since(start))
	}
	window := got[len(got)-1]
	if len(got) < 2 {
		t.Fatalf("%d NOTIFYs for 300 signals over 1.5 s, want one per interval (%v)", len(got), got)
	}
	if most := int(window/interval) + 1; len(got) > most {
		t.Fatalf("%d NOTIFYs in %v, want at most %d (one per %v); the first: %v", len(got), window, most, interval, got[:min(len(got), 8)])
	}
	if got[0] > interval {
		t.Errorf("the first NOTIFY came %v after the first signal, want at once", got[0])
	}
	for i := 1; i < len(got); i++ {
		// The receiving end adds its own jitter: 50 ms of slack.
		if gap := got[i] - got[i-1]; gap < interval-50*time.Millisecond {
			t.Errorf("NOTIFYs %d and %d came %v apart, less than the interval %v", i-1, i, gap, interval)
		}
	}
	if c := counter(t, m.Notifies); c != float64(len(got)) {
		t.Errorf("pginbox_notifies_total = %v, want %d", c, len(got))
	}

	// After the quiet spell, one signal is one NOTIFY.
	n.Signal()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if _, err := listen.WaitForNotification(wctx); err != nil {
		t.Fatalf("no NOTIFY for a signal after a quiet spell: %v", err)
	}
}
