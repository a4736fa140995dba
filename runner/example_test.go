package runner_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
	"github.com/pginbox/pginbox/runner/verify"
)

// Example embeds the runner: it migrates an empty database, receives one
// signed Sume delivery and runs a Go handler on the stored event, in the
// transaction that completes it.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	handled := make(chan string, 1)
	handler := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		// Writes through tx commit if and only if the event is completed.
		handled <- ev.EventType
		return nil
	})
	sume, err := verify.New("sume", []string{"demo-secret-change-me"})
	if err != nil {
		panic(err)
	}
	srv, err := runner.New(ctx, runner.Config{
		Addr:      "127.0.0.1:0", // any free port
		AdminAddr: "off",         // no operators' listener in this example
		Providers: map[string]verify.Provider{"sume": sume},
		Handler:   handler,
		// The other zero values: migrate at start, LISTEN/NOTIFY wake-ups,
		// the default schedules.
	}, databaseURL, slog.New(slog.DiscardHandler))
	if err != nil {
		panic(err)
	}
	go func() { _ = srv.Run(ctx) }()

	// A delivery as Sume signs it: v1=hex(HMAC-SHA256(secret, "<timestamp>.<body>")).
	now := time.Now()
	body := fmt.Appendf(nil, `{"event":"job.completed","job_id":"job_%d","status":"COMPLETED"}`, now.UnixNano())
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, []byte("demo-secret-change-me"))
	mac.Write([]byte(ts + "." + string(body)))
	req, _ := http.NewRequest(http.MethodPost, "http://"+srv.Addr().String()+"/webhooks/sume", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Sume-Timestamp", ts)
	req.Header.Set("X-Sume-Signature", "v1="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	var answer struct {
		EventID int64  `json:"event_id"`
		Outcome string `json:"outcome"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, answer.Outcome)

	select {
	case ev := <-handled:
		fmt.Println("handled", ev)
	case <-time.After(30 * time.Second):
		fmt.Println("not handled")
	}
	// Output:
	// 200 created
	// handled job.completed
}
