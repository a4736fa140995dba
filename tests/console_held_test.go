package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
)

// TestEventPageSaysHeldBehindHead: an ordered event held behind its
// sequence's head says "held: waits on #<head>" on its page, not "due 28.3s
// ago, waiting for a worker" (it waits for the head, not for a worker):
// with 8 workers running whose handler fails the head, and on a runner
// without a handler (PGINBOX_HANDLER=none) where a SQL stack failed it.
func TestEventPageSaysHeldBehindHead(t *testing.T) {
	t.Parallel()
	failHead := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		if ev.ExternalID == "evt_a" {
			return errors.New("plan price_9 not found")
		}
		return nil
	})
	for _, tc := range []struct {
		name string
		cfg  runner.Config
	}{
		{"8 workers", runner.Config{Handler: failHead, Workers: 8, PollInterval: 100 * time.Millisecond}},
		{"PGINBOX_HANDLER=none", runner.Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conf := NewConfig(t)
			pool := PoolFor(t, conf.URL(), 2)
			execSQL(t, pool, `SELECT webhooks.set_ordering('sume', '$.customer', '$.created')`)
			head, _ := ingest(t, pool, "sume", "evt_a", "job.completed", `{"created": 10, "customer": "cus_7"}`)
			held, _ := ingest(t, pool, "sume", "evt_b", "job.completed", `{"created": 20, "customer": "cus_7"}`)
			if tc.cfg.Handler == nil {
				c := claim(t, pool, "w", 10, "1 minute")
				if len(c) != 1 || c[0].ID != head {
					t.Fatalf("claimed %v, want the head %d alone", c, head)
				}
				execSQL(t, pool, `SELECT webhooks.fail($1, 'w', $2, 'handler: plan price_9 not found')`, c[0].ID, c[0].Attempts)
			}
			srv := startServer(t, conf.URL(), tc.cfg, sumeOnly)
			waitFor(t, 30*time.Second, "the head failed once", func() bool {
				return queryInt(t, pool, `SELECT attempts FROM webhooks.events WHERE id = $1`, head) >= 1
			})
			// Due for a while: its run_after passed when it arrived.
			time.Sleep(1100 * time.Millisecond)
			if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND status = 'pending' AND order_held AND run_after < now()`, held); n != 1 {
				t.Fatalf("event %d is not a due event held behind its head", held)
			}
			page := httpGet(t, srv.Admin+"/events/"+itoa64(held))
			want := fmt.Sprintf(`<span id="next-run">held: waits on #%d</span>`, head)
			if !strings.Contains(page, want) {
				t.Fatalf("the held event's page says, want %q:\n%s", want, around(page, "attempts"))
			}
		})
	}
}
