package maintenance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// historyBatch is how many events one webhooks.move_history() call moves:
// one short transaction each.
const historyBatch = 5000

// historyBudget bounds one pass: the next tick goes on where it stopped.
const historyBudget = 5 * time.Second

// history moves processed events from the queue into their day slices of
// webhooks.history (and, after an upgrade, first copies the old keys into
// webhooks.keys), in calls of historyBatch rows while there is more, and
// once an hour makes sure the day slices of the coming week exist.
func (s *Maintenance) history(ctx context.Context, _ string) error {
	if time.Since(s.daysEnsured) > time.Hour {
		if _, err := s.pool.Exec(ctx, `SELECT webhooks.ensure_history_days(7)`); err != nil {
			return fmt.Errorf("ensure_history_days: %w", err)
		}
		s.daysEnsured = time.Now()
	}
	deadline := time.Now().Add(historyBudget)
	for time.Now().Before(deadline) {
		var raw []byte
		if err := s.pool.QueryRow(ctx, `SELECT webhooks.move_history($1)`, historyBatch).Scan(&raw); err != nil {
			return fmt.Errorf("move_history: %w", err)
		}
		var rep struct {
			KeysCopied int64 `json:"keys_copied"`
			Moved      int64 `json:"moved"`
			Deleted    int64 `json:"deleted"`
			More       bool  `json:"more"`
		}
		if err := json.Unmarshal(raw, &rep); err != nil {
			return fmt.Errorf("move_history: %w", err)
		}
		if rep.KeysCopied > 0 {
			s.log.Info("storage upgrade: keys copied", "keys", rep.KeysCopied)
		}
		if !rep.More {
			return nil
		}
	}
	return nil
}
