package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
	"github.com/pginbox/pginbox/runner/verify"
)

// An application embeds the runner and processes events with its own
// [runner.Handler]. The handler writes through the transaction that completes
// the event, so its rows exist if and only if the event is processed, once; a
// returned error fails the event (retried with backoff, dead after
// max_attempts) and rolls the writes back.
//
// It needs a database, so it is compiled but not run here;
// TestExampleEmbedRunner in tests/examples_test.go runs the same code against a
// test database.
func Example_embed() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	handler := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		var p struct {
			OrderID string `json:"order_id"`
			Amount  string `json:"amount"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			return fmt.Errorf("event %d: %w", ev.ID, err)
		}
		if p.OrderID == "" {
			return fmt.Errorf("event %d: no order_id", ev.ID) // fails the event: retried later
		}
		// Runs in the transaction that completes the event: the row exists if and
		// only if the event is processed, once.
		_, err := tx.Exec(ctx, `INSERT INTO app.orders_paid (order_id, amount) VALUES ($1, $2)`, p.OrderID, p.Amount)
		return err
	})

	sume, err := verify.New("sume", []string{os.Getenv("SUME_SECRET")})
	if err != nil {
		log.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	srv, err := runner.New(ctx, runner.Config{
		Addr:          "127.0.0.1:8080", // POST /webhooks/sume
		Providers:     map[string]verify.Provider{"sume": sume},
		ProviderKinds: map[string]string{"sume": "sume"},
		Handler:       handler,
		Workers:       4,
		Migrate:       true, // the webhooks schema comes with the app
		Listen:        true, // LISTEN/NOTIFY wake-ups; workers poll too
	}, os.Getenv("DATABASE_URL"), logger)
	if err != nil {
		log.Fatal(err)
	}
	// Serves until SIGINT/SIGTERM, then shuts down gracefully.
	if err := srv.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
