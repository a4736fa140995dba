// Command river is the bench's peer: River's own work benchmark (the shape
// of `river bench --num-total-jobs`), run against a scratch database on the
// bench's cluster so its figure sits next to pginbox's in the same run. It
// lives in a Go module of its own, so River and its dependencies never enter
// pginbox's module graph.
//
// It migrates River's schema, inserts -jobs no-op jobs with InsertMany in
// batches of 5,000, then starts a client with River's tuned settings —
// FetchCooldown 1 ms, FetchPollInterval left at River's default (1 s), one
// queue of 2,000 workers — and counts completions on a subscription until
// every job is done. It prints "working" on stdout when it starts its
// client, "worked" once every job is done (before it stops the client and
// closes its connections), then one JSON object with the result.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs is the benchmark's job: it carries a number and does nothing.
type noopArgs struct {
	Num int `json:"num"`
}

// Kind names the job kind.
func (noopArgs) Kind() string { return "benchmark" }

// noopWorker completes every job at once.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

// Work does nothing.
func (*noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// result is what the bench reads.
type result struct {
	Version       string  `json:"river_version"`
	Jobs          int     `json:"jobs"`
	Worked        int     `json:"worked"`
	Seconds       float64 `json:"seconds"`
	JobsPerS      float64 `json:"jobs_per_s"`
	WALBytesPer   float64 `json:"wal_bytes_per_job"`
	FetchCooldown string  `json:"fetch_cooldown"`
	FetchPoll     string  `json:"fetch_poll_interval"`
	MaxWorkers    int     `json:"max_workers"`
}

func main() {
	url := flag.String("url", os.Getenv("DATABASE_URL"), "database to use (River's tables are created there)")
	jobs := flag.Int("jobs", 50000, "jobs to insert and work")
	cooldown := flag.Duration("fetch-cooldown", time.Millisecond, "River FetchCooldown")
	workers := flag.Int("max-workers", 2000, "MaxWorkers of the default queue")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res, err := run(ctx, *url, *jobs, *cooldown, *workers)
	if err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url string, jobs int, cooldown time.Duration, maxWorkers int) (*result, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if _, err := pool.Exec(ctx, `TRUNCATE river_job`); err != nil {
		return nil, fmt.Errorf("truncate: %w", err)
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	cfg := &river.Config{
		FetchCooldown: cooldown, // FetchPollInterval: River's default
		Logger:        log,
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers:       workers,
	}
	client, err := river.NewClient(driver, cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: jobs + 1000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer unsubscribe()

	const insertBatch = 5000
	params := make([]river.InsertManyParams, 0, insertBatch)
	for n := 0; n < jobs; {
		params = params[:0]
		for ; len(params) < insertBatch && n < jobs; n++ {
			params = append(params, river.InsertManyParams{Args: noopArgs{Num: n}})
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return nil, fmt.Errorf("insert: %w", err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE river_job`); err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}

	var walStart, walEnd int64
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'::pg_lsn`).Scan(&walStart); err != nil {
		return nil, fmt.Errorf("wal position: %w", err)
	}
	fmt.Println("working") // the bench starts measuring CPU here
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	worked := 0
	last := start
	for worked < jobs {
		select {
		case <-ctx.Done():
			_ = client.Stop(context.Background())
			return nil, fmt.Errorf("%d of %d jobs worked: %w", worked, jobs, ctx.Err())
		case ev := <-events:
			if ev == nil {
				return nil, fmt.Errorf("subscription closed after %d jobs", worked)
			}
			if ev.Kind != river.EventKindJobCompleted {
				return nil, fmt.Errorf("job %d: %s", ev.Job.ID, ev.Kind)
			}
			worked++
			last = time.Now()
		}
	}
	// Before any connection closes: the bench reads the server's CPU here
	// (the CPU of a backend that has exited is no longer counted).
	fmt.Println("worked")
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopCancel()
	if err := client.Stop(stopCtx); err != nil {
		return nil, fmt.Errorf("stop: %w", err)
	}
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'::pg_lsn`).Scan(&walEnd); err != nil {
		return nil, fmt.Errorf("wal position: %w", err)
	}
	secs := last.Sub(start).Seconds()
	return &result{
		Version: riverVersion(), Jobs: jobs, Worked: worked, Seconds: secs, JobsPerS: float64(worked) / secs,
		WALBytesPer:   float64(walEnd-walStart) / float64(worked),
		FetchCooldown: cooldown.String(), FetchPoll: "1s (River's default)", MaxWorkers: maxWorkers,
	}, nil
}
