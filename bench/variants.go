package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// variantPoint is one way of processing, measured per event over the same
// number of events, side by side with the others in the same run: the
// pginbox variants at the default configuration (8 workers × batch 100,
// sql: handler) and River's own work benchmark as the peer.
type variantPoint struct {
	Name   string  `json:"name"`
	What   string  `json:"what"`
	Events int64   `json:"events"`
	PerS   float64 `json:"per_s"`
	// WALPer is WAL bytes per event; IndexTuplesPer the index entries
	// inserted per event (B-tree insert records in the WAL, from
	// pg_walinspect; -1 when unavailable); HOTRatio the queue table's
	// n_tup_hot_upd / n_tup_upd; RowVersionsPer the queue table's row
	// versions written per event (inserts are not counted: the events were
	// preloaded); RoundTripsPer the top-level statements per event
	// (pg_stat_statements, utility statements included; -1 when
	// unavailable).
	WALPer         float64 `json:"wal_bytes_per_event"`
	IndexTuplesPer float64 `json:"index_tuples_per_event"`
	HOTRatio       float64 `json:"hot_ratio"`
	RowVersionsPer float64 `json:"row_versions_per_event"`
	PGCPUus        float64 `json:"postgres_cpu_us_per_event"`
	ClientCPUus    float64 `json:"client_cpu_us_per_event"`
	RoundTripsPer  float64 `json:"round_trips_per_event"`
	Audit          bool    `json:"audit_ok"`
	Rounds         int     `json:"rounds"`
}

// variantsResult is the side-by-side table and the peer.
type variantsResult struct {
	EventsPerRun int            `json:"events_per_run"`
	Points       []variantPoint `json:"points"`
	River        *riverRun      `json:"river,omitempty"`
	RiverError   string         `json:"river_error,omitempty"`
}

// riverRun is what bench/river prints, plus what the bench measured around it.
type riverRun struct {
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

// tableStats are a table's cumulative row counters.
type tableStats struct{ ins, upd, hot int64 }

func readTableStats(ctx context.Context, pool *pgxpool.Pool, table string) tableStats {
	var s tableStats
	_, _ = pool.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
	_ = pool.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins), 0)::bigint, coalesce(sum(n_tup_upd), 0)::bigint, coalesce(sum(n_tup_hot_upd), 0)::bigint
		FROM pg_stat_user_tables WHERE relid = to_regclass($1)`, table).Scan(&s.ins, &s.upd, &s.hot)
	return s
}

// indexInserts counts the B-tree insert records (leaf inserts, posting-list
// inserts and splits, each one index tuple) in the WAL between two
// positions; -1 without pg_walinspect.
func indexInserts(ctx context.Context, pool *pgxpool.Pool, from, to int64) int64 {
	var n int64 = -1
	// pg_walinspect reads only flushed WAL: a committed transaction id
	// flushes everything before its commit record.
	tx, err := pool.Begin(ctx)
	if err != nil {
		return -1
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit
	if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
		return -1
	}
	if _, err := tx.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		return -1
	}
	if err := tx.Commit(ctx); err != nil {
		return -1
	}
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(count), 0)::bigint
		FROM pg_get_wal_stats(('0/0'::pg_lsn + $1::numeric),
		                      least('0/0'::pg_lsn + $2::numeric, pg_current_wal_flush_lsn()), true)
		WHERE "resource_manager/record_type" IN ('Btree/INSERT_LEAF', 'Btree/INSERT_POST', 'Btree/SPLIT_L', 'Btree/SPLIT_R')`,
		from, to).Scan(&n); err != nil {
		return -1
	}
	return n
}

// roundTrips sums the top-level statements pg_stat_statements saw in this
// database since its last reset, less the bench's own probes; -1 when it is
// not available.
func roundTrips(ctx context.Context, env *pgEnv, pool *pgxpool.Pool) int64 {
	if !env.pgss {
		return -1
	}
	var n int64 = -1
	_ = pool.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND query !~* 'pg_stat_statements|pg_stat_clear_snapshot|pg_stat_user_tables|pg_get_wal_stats|pg_current_wal|pg_backend_pid'
		  AND query !~ '^SELECT EXISTS \(SELECT \$1 FROM webhooks\.events WHERE status|^SELECT \(SELECT count\(\*\) FROM webhooks\.events WHERE status'`).Scan(&n)
	return n
}

// variantAcc accumulates one variant over its rounds.
type variantAcc struct {
	events, idx, rt, wal, rows, upd, hot int64
	secs, wall, pg, client               float64
	audit                                bool
	rounds                               int
	noIdx, noRT                          bool
}

// runVariants is scenario 3's side-by-side table: each pginbox variant and
// River drain the same number of events, in interleaved rounds (A B C D,
// then D C B A) so that other load on the machine hits them alike.
func runVariants(ctx context.Context, env *pgEnv, cfg config, binDir string, log *slog.Logger) (*variantsResult, []audit, error) {
	dbURL, err := env.scratch(ctx, "variants")
	if err != nil {
		return nil, nil, err
	}
	defer env.dropScratch(context.Background(), "variants")
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	_, _ = probe.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`)

	riverBin, riverURL, rerr := prepareRiver(ctx, env, binDir)
	res := &variantsResult{EventsPerRun: cfg.variantN}
	if rerr != nil {
		res.RiverError = rerr.Error()
		log.Warn("river peer unavailable; pginbox variants only", "error", rerr)
	} else {
		defer env.dropScratch(context.Background(), "river")
	}
	names := []string{variantRowLock, variantTwoPhase, variantPerEvent}
	if !cfg.variantPerEvent {
		names = []string{variantRowLock, variantTwoPhase}
	}
	byLever := map[string]lever{}
	for _, l := range levers() {
		names = append(names, l.name)
		byLever[l.name] = l
	}
	names = append(names, "river")
	acc := map[string]*variantAcc{}
	var audits []audit
	limit := 30 * time.Second
	for round := 0; round < cfg.variantRounds && ctx.Err() == nil; round++ {
		order := slices.Clone(names)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			a := acc[v]
			if a == nil {
				a = &variantAcc{audit: true}
				acc[v] = a
			}
			if v == "river" {
				if rerr != nil {
					continue
				}
				rr, pgCPU, clientCPU, err := runRiver(ctx, riverBin, riverURL, cfg.variantN, probe)
				if err != nil {
					res.RiverError = err.Error()
					log.Warn("river peer failed", "error", err)
					rerr = err
					continue
				}
				res.River = rr
				a.events += int64(rr.Worked)
				a.secs += rr.Seconds
				a.pg += pgCPU
				a.client += clientCPU
				a.rounds++
				log.Info("river", "round", round, "jobs_per_s", round1(rr.JobsPerS))
				continue
			}
			lv, isLever := byLever[v]
			workers, mode, undo := 8, v, func(context.Context) error { return nil }
			if isLever {
				workers, mode = lv.workers, variantRowLock
				if lv.apply != nil {
					u, err := lv.apply(ctx, probe)
					if err != nil {
						return res, audits, err
					}
					undo = u
				}
			}
			provider := fmt.Sprintf("p3v-%s-%d", strings.NewReplacer(" ", "", ",", "-").Replace(v), round)
			if err := preload(ctx, probe, provider, 1, int64(cfg.variantN)); err != nil {
				return res, audits, err
			}
			pgssReset(ctx, env, probe)
			s0 := readTableStats(ctx, probe, "webhooks.events")
			w0 := readWalPos(ctx, probe)
			took, use, err := runWorkersOpt(ctx, dbURL, probe, workers, 100, mode, limit, log)
			w1 := readWalPos(ctx, probe)
			if err != nil {
				return res, audits, err
			}
			s1 := readTableStats(ctx, probe, "webhooks.events")
			n, secs, _ := handledRate(ctx, probe, provider)
			au, err := runAudit(ctx, probe, auditInput{scenario: fmt.Sprintf("process variant %s (round %d)", v, round+1),
				providers: []string{provider}, handler: true, preloaded: true, createdAnswers: -1})
			if err != nil {
				return res, audits, err
			}
			audits = append(audits, au)
			idx := indexInserts(ctx, probe, w0.lsn, w1.lsn)
			rt := roundTrips(ctx, env, probe)
			a.events += n
			a.secs += secs
			a.wall += took.Seconds()
			a.pg += use.Postgres * took.Seconds()
			a.client += use.Bench * took.Seconds()
			a.wal += w1.lsn - w0.lsn
			a.upd += s1.upd - s0.upd
			a.hot += s1.hot - s0.hot
			a.rows += s1.upd - s0.upd
			if idx < 0 {
				a.noIdx = true
			} else {
				a.idx += idx
			}
			if rt < 0 {
				a.noRT = true
			} else {
				a.rt += rt
			}
			a.audit = a.audit && au.OK
			a.rounds++
			log.Info("process variant", "variant", v, "round", round, "per_s", round1(float64(n)/secs), "audit", au.OK)
			if _, err := probe.Exec(ctx, `TRUNCATE webhooks.inbox, webhooks.history, webhooks.keys, bench.handled CASCADE`); err != nil {
				return res, audits, err
			}
			if err := undo(ctx); err != nil {
				return res, audits, err
			}
		}
	}
	what := map[string]string{
		variantRowLock:  "the row lock as the lease (default, PGINBOX_LEASE_MODE=row-lock): one webhooks.process_pending() statement per batch locks it FOR UPDATE SKIP LOCKED, runs the handler over it and marks it processed",
		variantTwoPhase: "the two-phase lease (PGINBOX_LEASE_MODE=two-phase): webhooks.claim() in a transaction of its own, then one webhooks.process_batch() statement (a subtransaction and complete() per event)",
		variantPerEvent: "the two-phase lease event by event from Go: claim(), then a savepoint, the handler, complete() and a release per event",
		"river":         "River's own work benchmark (bench/river): no-op jobs, FetchCooldown 1 ms, FetchPollInterval River's default (1 s), MaxWorkers 2,000",
	}
	for name, l := range byLever {
		what[name] = l.what
	}
	for _, v := range names {
		a := acc[v]
		if a == nil || a.rounds == 0 || a.events == 0 || a.secs <= 0 {
			continue
		}
		p := variantPoint{Name: v, What: what[v], Events: a.events, Rounds: a.rounds, PerS: round1(float64(a.events) / a.secs),
			PGCPUus: round1(a.pg * 1e6 / float64(a.events)), ClientCPUus: round1(a.client * 1e6 / float64(a.events)), Audit: a.audit,
			IndexTuplesPer: -1, RoundTripsPer: -1, HOTRatio: -1, RowVersionsPer: -1}
		if v == "river" {
			p.Name = "river " + res.River.Version
			p.WALPer = round1(res.River.WALBytesPer)
		} else {
			p.WALPer = round1(float64(a.wal) / float64(a.events))
			p.RowVersionsPer = round3(float64(a.rows) / float64(a.events))
			if a.upd > 0 {
				p.HOTRatio = round3(float64(a.hot) / float64(a.upd))
			}
			if !a.noIdx {
				p.IndexTuplesPer = round3(float64(a.idx) / float64(a.events))
			}
			if !a.noRT {
				p.RoundTripsPer = round3(float64(a.rt) / float64(a.events))
			}
		}
		res.Points = append(res.Points, p)
	}
	return res, audits, nil
}

// prepareRiver builds bench/river (its own Go module) and creates its
// scratch database.
func prepareRiver(ctx context.Context, env *pgEnv, binDir string) (string, string, error) {
	bin := filepath.Join(binDir, "riverbench")
	if _, err := os.Stat(bin); err != nil {
		cmd := exec.CommandContext(ctx, "go", "build", "-C", "bench/river", "-o", bin, ".")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", "", fmt.Errorf("go build -C bench/river: %w", err)
		}
	}
	db := env.prefix + "river"
	if err := env.createDB(ctx, db, ""); err != nil {
		return "", "", err
	}
	return bin, env.url(db), nil
}

// runRiver runs River's work benchmark once and measures Postgres's and
// River's CPU while it works its jobs: bench/river prints "working" just
// before it starts its client and "worked" once every job is done, while
// its connections are still open (an exited backend's CPU is no longer
// counted), then its result.
func runRiver(ctx context.Context, bin, url string, jobs int, probe *pgxpool.Pool) (*riverRun, float64, float64, error) {
	var backend int
	_ = probe.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	cmd := exec.CommandContext(ctx, bin, "-url", url, "-jobs", fmt.Sprint(jobs))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, 0, fmt.Errorf("river bench: %w", err)
	}
	var meter *cpuMeter
	var pgCPU, riverCPU float64
	var rr riverRun
	var parsed bool
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Bytes()
		if string(line) == "working" {
			meter = startCPU(cmd.Process.Pid, postmasterPID(backend))
			continue
		}
		if string(line) == "worked" && meter != nil {
			_, r, p := meter.raw()
			pgCPU, riverCPU = p.Seconds(), r.Seconds()
			continue
		}
		if err := json.Unmarshal(line, &rr); err == nil {
			parsed = true
		}
	}
	if err := cmd.Wait(); err != nil {
		return nil, 0, 0, fmt.Errorf("river bench: %w", err)
	}
	if !parsed || rr.Worked == 0 {
		return nil, 0, 0, fmt.Errorf("river bench printed no result")
	}
	return &rr, pgCPU, riverCPU, nil
}

// Find returns the named pginbox variant's point, nil when it did not run.
func (v *variantsResult) Find(name string) *variantPoint {
	if v == nil {
		return nil
	}
	for i := range v.Points {
		if v.Points[i].Name == name {
			return &v.Points[i]
		}
	}
	return nil
}

// RiverPoint returns River's point, nil when the peer did not run.
func (v *variantsResult) RiverPoint() *variantPoint {
	if v == nil || v.River == nil {
		return nil
	}
	for i := range v.Points {
		if strings.HasPrefix(v.Points[i].Name, "river") {
			return &v.Points[i]
		}
	}
	return nil
}
