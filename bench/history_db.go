package main

import (
	"context"
	"log/slog"
	"time"
)

// historyDB is the database keeping a seeded history (rows processed
// events over seedDays days) that the growth and retention scenarios share:
// seeded on first use, so a run of both seeds it once; growth measures on it
// first, then retention drops its old days. main drops it after the last.
type historyDB struct {
	env     *pgEnv
	rows    int64
	url     string
	load    time.Duration
	created bool
}

// get returns the database's URL and how long seeding it took, seeding it
// now when no scenario has yet.
func (h *historyDB) get(ctx context.Context, log *slog.Logger) (string, time.Duration, error) {
	if h.url != "" {
		return h.url, h.load, nil
	}
	if h.created { // a seeding that failed: start again
		h.drop()
	}
	url, err := h.env.scratch(ctx, "history")
	if err != nil {
		return "", 0, err
	}
	h.created = true
	pool, err := newPool(ctx, url, 2, "bench-seed")
	if err != nil {
		return "", 0, err
	}
	defer pool.Close()
	log.Info("seeding history", "rows", h.rows, "days", seedDays)
	took, err := seedHistory(ctx, pool, h.rows, log)
	if err != nil {
		return "", 0, err
	}
	log.Info("history seeded", "rows", h.rows, "seconds", round1(took.Seconds()))
	h.url, h.load = url, took
	return url, took, nil
}

// drop drops the database, if it was created (seeded or not).
func (h *historyDB) drop() {
	if h.created {
		h.env.dropScratch(context.Background(), "history")
		h.url, h.created = "", false
	}
}
