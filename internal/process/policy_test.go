package process

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/pginboxtype"
)

// TestStrategiesFor: the policy's choice of lease strategies per handler
// kind and PGINBOX_LEASE_MODE — a sql: handler under the row lock unless
// two-phase, a Go Handler under the two-phase lease unless row-lock, an
// http: handler always two-phase; claimed sql: batches in one
// process_batch statement unless run event by event.
func TestStrategiesFor(t *testing.T) {
	t.Parallel()
	sqlH, err := ParseHandler("sql:app.on_event", 0)
	if err != nil {
		t.Fatal(err)
	}
	httpH, err := ParseHandler("http:http://127.0.0.1:1/hook", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	goH := pginboxtype.HandlerFunc(func(context.Context, pgx.Tx, *pginboxtype.Event) error { return nil })
	cases := []struct {
		name                             string
		handler                          pginboxtype.Handler
		mode                             string
		rowLock, batchStatement, claimed string
	}{
		{"sql default", sqlH, "", "process.rowLockSQL", "process.twoPhaseBatch", "process.twoPhaseEvent"},
		{"sql row-lock", sqlH, "row-lock", "process.rowLockSQL", "process.twoPhaseBatch", "process.twoPhaseEvent"},
		{"sql two-phase", sqlH, "two-phase", "<nil>", "process.twoPhaseBatch", "process.twoPhaseEvent"},
		{"sql event by event", PerEvent(sqlH), "two-phase", "<nil>", "<nil>", "process.twoPhaseEvent"},
		{"go default", goH, "", "<nil>", "<nil>", "process.twoPhaseEvent"},
		{"go row-lock", goH, "row-lock", "process.rowLockGo", "<nil>", "process.twoPhaseEvent"},
		{"go two-phase", goH, "two-phase", "<nil>", "<nil>", "process.twoPhaseEvent"},
		{"http default", httpH, "", "<nil>", "<nil>", "process.external"},
		{"http row-lock", httpH, "row-lock", "<nil>", "<nil>", "process.external"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := &Workers{Handler: c.handler, LeaseMode: c.mode}
			s := w.strategiesFor(c.handler)
			got := [3]string{fmt.Sprintf("%T", s.rowLock), fmt.Sprintf("%T", s.batchStatement), fmt.Sprintf("%T", s.claimed)}
			want := [3]string{c.rowLock, c.batchStatement, c.claimed}
			if got != want {
				t.Fatalf("strategies %v, want %v", got, want)
			}
		})
	}
}
