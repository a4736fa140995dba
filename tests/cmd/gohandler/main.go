// Command gohandler is a runner that embeds pginbox with a Go handler whose
// effect lies outside the database, for tests that kill such a runner: it
// reads its configuration from the environment as `pginbox serve` does
// (runner.ConfigFromEnv; PGINBOX_HANDLER unset), and its handler POSTs each
// event as JSON to $GOHANDLER_URL, failing the event unless the answer is
// 2xx. SIGTERM or SIGINT stops it gracefully.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gohandler:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	target := os.Getenv("GOHANDLER_URL")
	if target == "" {
		return fmt.Errorf("GOHANDLER_URL is not set")
	}
	cfg, err := runner.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 10 * time.Second}
	cfg.Handler = runner.HandlerFunc(func(ctx context.Context, _ pgx.Tx, ev *runner.Event) error {
		body, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("receiver answered %d", resp.StatusCode)
		}
		return nil
	})
	srv, err := runner.New(ctx, cfg, os.Getenv("DATABASE_URL"), nil)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}
