package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pginbox/pginbox"
)

// upgradeBatch is the max_rows of each webhooks.move_history() call, as
// pg_cron's or an operator's calls would pass.
const upgradeBatch = 10_000

// createKeys matches the statement that creates webhooks.keys: the first
// migration of storage v2.
var createKeys = regexp.MustCompile(`(?i)create\s+table\s+(if\s+not\s+exists\s+)?webhooks\.keys\b`)

// versionBeforeStorageV2 is the migration just before storage v2: the
// layout of v0.2 (one table, webhooks.events).
func versionBeforeStorageV2() (int64, error) {
	return versionBefore(createKeys, "webhooks.keys")
}

// upgradePhase is one phase of the move after the upgrade: the keys copied
// into webhooks.keys, or the processed events moved into history.
type upgradePhase struct {
	Calls int   `json:"calls"`
	Rows  int64 `json:"rows"`
	// Deleted counts events of days already dropped (deleted, not moved).
	Deleted int64   `json:"deleted,omitempty"`
	Seconds float64 `json:"seconds"`
	PerS    float64 `json:"rows_per_s"`
	// SecondsPerMillion is Seconds scaled to a million rows.
	SecondsPerMillion float64 `json:"seconds_per_million"`
	// MaxCallMS is the longest single call: each is one transaction.
	MaxCallMS   float64 `json:"max_call_ms"`
	WALBytes    int64   `json:"wal_bytes"`
	WALBytesRow float64 `json:"wal_bytes_per_row"`
}

// upgradeResult is scenario "upgrade": a v0.2 database holding Rows
// processed events migrated to storage v2, then moved.
type upgradeResult struct {
	FromVersion int64   `json:"from_version"`
	ToVersion   int64   `json:"to_version"`
	Rows        int64   `json:"rows"`
	Days        int     `json:"days"`
	LoadSeconds float64 `json:"load_seconds"`
	// MigrateSeconds is pginbox.Migrate from FromVersion to ToVersion (the
	// swap: nothing moves inside it), MigrateWAL its WAL bytes.
	MigrateSeconds float64      `json:"migrate_seconds"`
	MigrateWAL     int64        `json:"migrate_wal_bytes"`
	Batch          int          `json:"batch"`
	Keys           upgradePhase `json:"keys_copy"`
	Move           upgradePhase `json:"move"`
	// After the move: keys in webhooks.keys, events in history and left in
	// the queue; OK when every event has its key and moved.
	KeysAfter    int64    `json:"keys_after"`
	HistoryAfter int64    `json:"history_after"`
	InboxAfter   int64    `json:"inbox_after"`
	OK           bool     `json:"ok"`
	Problems     []string `json:"problems,omitempty"`
}

// moveReport is what webhooks.move_history() returns.
type moveReport struct {
	KeysCopied  int64 `json:"keys_copied"`
	Moved       int64 `json:"moved"`
	Deleted     int64 `json:"deleted"`
	KeysPending bool  `json:"keys_pending"`
	More        bool  `json:"more"`
}

// runUpgrade is scenario "upgrade": a database migrated up to the version
// before storage v2, seeded with cfg.upgradeRows processed events over
// seedDays days (set-based, into webhooks.events, then a table), migrated
// with pginbox.Migrate (timed: the swap), then webhooks.move_history(10000)
// called until every old key is copied (timed: the key copy) and every
// event moved (timed: the move).
func runUpgrade(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*upgradeResult, error) {
	res := &upgradeResult{Rows: cfg.upgradeRows, Days: seedDays, Batch: upgradeBatch}
	from, err := versionBeforeStorageV2()
	if err != nil {
		return nil, err
	}
	res.FromVersion = from
	url, err := beforeDB(ctx, env, "upgrade", from)
	if err != nil {
		return nil, err
	}
	defer env.dropScratch(context.Background(), "upgrade")
	pool, err := newPool(ctx, url, 2, "bench-upgrade")
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	log.Info("upgrade: seeding the v0.2 layout", "rows", cfg.upgradeRows, "version", from)
	load, err := seedEventsV02(ctx, pool, cfg.upgradeRows, log)
	if err != nil {
		return res, err
	}
	res.LoadSeconds = round1(load.Seconds())

	w0 := readWalPos(ctx, pool)
	t0 := time.Now()
	db := stdlib.OpenDBFromPool(pool)
	err = pginbox.Migrate(ctx, db)
	res.MigrateSeconds = round3(time.Since(t0).Seconds())
	res.MigrateWAL = readWalPos(ctx, pool).lsn - w0.lsn
	if err != nil {
		_ = db.Close()
		return res, fmt.Errorf("migrate: %w", err)
	}
	if p, err := pginbox.NewMigrationProvider(db); err == nil {
		res.ToVersion, _ = p.GetDBVersion(ctx)
	}
	_ = db.Close()
	log.Info("upgrade: migrated", "seconds", res.MigrateSeconds, "to", res.ToVersion)

	keysDone := false
	for ctx.Err() == nil {
		ph := &res.Move
		if !keysDone {
			ph = &res.Keys
		}
		w0 := readWalPos(ctx, pool)
		t0 := time.Now()
		var raw []byte
		if err := pool.QueryRow(ctx, `SELECT webhooks.move_history($1)`, upgradeBatch).Scan(&raw); err != nil {
			return res, fmt.Errorf("move_history: %w", err)
		}
		took := time.Since(t0)
		var rep moveReport
		if err := json.Unmarshal(raw, &rep); err != nil {
			return res, fmt.Errorf("move_history: %w", err)
		}
		ph.Calls++
		ph.Rows += rep.KeysCopied + rep.Moved
		ph.Deleted += rep.Deleted
		ph.Seconds += took.Seconds()
		ph.MaxCallMS = max(ph.MaxCallMS, round3(float64(took)/1e6))
		ph.WALBytes += readWalPos(ctx, pool).lsn - w0.lsn
		if !keysDone && !rep.KeysPending {
			keysDone = true
			log.Info("upgrade: keys copied", "keys", res.Keys.Rows, "seconds", round1(res.Keys.Seconds))
			continue
		}
		if keysDone && !rep.More {
			break
		}
		if ph.Calls > 1_000_000 {
			return res, fmt.Errorf("move_history: no end after %d calls", ph.Calls)
		}
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	for _, ph := range []*upgradePhase{&res.Keys, &res.Move} {
		ph.Seconds = round3(ph.Seconds)
		if ph.Seconds > 0 && ph.Rows > 0 {
			ph.PerS = round1(float64(ph.Rows) / ph.Seconds)
			ph.SecondsPerMillion = round1(ph.Seconds * 1e6 / float64(ph.Rows))
		}
		if ph.Rows > 0 {
			ph.WALBytesRow = round1(float64(ph.WALBytes) / float64(ph.Rows))
		}
	}
	upgradeCheck(ctx, pool, res)
	log.Info("upgrade: moved", "rows", res.Move.Rows, "seconds", round1(res.Move.Seconds), "ok", res.OK)
	if !res.OK {
		return res, fmt.Errorf("the move left: %s", strings.Join(res.Problems, "; "))
	}
	return res, nil
}

// upgradeCheck counts what the move left: every seeded event has its key,
// every one is in history, the queue is empty.
func upgradeCheck(ctx context.Context, pool *pgxpool.Pool, res *upgradeResult) {
	err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhooks.keys), (SELECT count(*) FROM webhooks.history),
		(SELECT count(*) FROM webhooks.inbox)`).Scan(&res.KeysAfter, &res.HistoryAfter, &res.InboxAfter)
	if err != nil {
		res.Problems = append(res.Problems, "count: "+err.Error())
	}
	if res.KeysAfter != res.Rows {
		res.Problems = append(res.Problems, fmt.Sprintf("%d keys for %d events", res.KeysAfter, res.Rows))
	}
	if res.HistoryAfter != res.Rows {
		res.Problems = append(res.Problems, fmt.Sprintf("%d events in history of %d", res.HistoryAfter, res.Rows))
	}
	if res.InboxAfter != 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d events left in the queue", res.InboxAfter))
	}
	if res.Keys.Rows != res.Rows {
		res.Problems = append(res.Problems, fmt.Sprintf("move_history() reported %d keys copied of %d", res.Keys.Rows, res.Rows))
	}
	res.OK = len(res.Problems) == 0
}
