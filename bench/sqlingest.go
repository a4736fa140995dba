package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/notify"
)

// The three statements compared. ingestSQL is exactly what the runner's
// receiver sends; rawSQL is the ceiling: the plain upsert into a table of
// the same shape, keys and indexes.
const (
	ingestSQL       = `SELECT event_id, outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb)`
	ingestNotifySQL = `SELECT event_id, outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb, 'webhook', true)`
	ingestDigestSQL = `SELECT event_id, outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb, body_sha256 => $5)`
	rawSQL          = `INSERT INTO bench.raw (provider, external_id, event_type, payload, source) VALUES ($1, $2, $3, $4::jsonb, 'webhook') ON CONFLICT (provider, external_id) DO NOTHING`
)

func callIngest(q string) func(ctx context.Context, c *pgx.Conn, provider, key, payload string) (string, error) {
	return func(ctx context.Context, c *pgx.Conn, provider, key, payload string) (string, error) {
		var id int64
		var outcome string
		err := c.QueryRow(ctx, q, provider, key, "job.completed", payload).Scan(&id, &outcome)
		return outcome, err
	}
}

// callIngestDigest is what the receiver sends for a key the provider does
// not sign (github, shopify, sume keyed by X-Sume-Event-Id): the same call
// with the SHA-256 of the raw body, computed here as the receiver does.
func callIngestDigest(ctx context.Context, c *pgx.Conn, provider, key, payload string) (string, error) {
	sum := sha256.Sum256([]byte(payload))
	var id int64
	var outcome string
	err := c.QueryRow(ctx, ingestDigestSQL, provider, key, "job.completed", payload, sum[:]).Scan(&id, &outcome)
	return outcome, err
}

func callRaw(ctx context.Context, c *pgx.Conn, provider, key, payload string) (string, error) {
	tag, err := c.Exec(ctx, rawSQL, provider, key, "job.completed", payload)
	if err != nil {
		return "", err
	}
	if tag.RowsAffected() == 1 {
		return "created", nil
	}
	return "duplicate", nil
}

// variantResult is one measured way of ingesting, summed over its slices.
type variantResult struct {
	Name       string           `json:"name"`
	Conns      int              `json:"conns"`
	Mode       string           `json:"mode"`
	Deliveries int64            `json:"deliveries"`
	Seconds    float64          `json:"seconds"`
	PerS       float64          `json:"per_s"`
	SliceRates []float64        `json:"slice_rates"`
	Errors     int64            `json:"errors"`
	Outcomes   map[string]int64 `json:"outcomes"`
	// WAL bytes and transaction ids per delivery: a transaction that writes
	// anything (even a row lock) takes an xid and, with synchronous_commit
	// on, waits for a WAL flush at commit.
	WALBytesPer float64 `json:"wal_bytes_per_delivery"`
	// PGCPUus is PostgreSQL's CPU time per delivery (all its processes),
	// in µs: less sensitive to other load on the machine than the rate.
	PGCPUus float64 `json:"postgres_cpu_us_per_delivery,omitempty"`
	// RunnerCPUus and BenchCPUus are the runner's (HTTP variants) and the
	// load generator's CPU per delivery in µs; Cores is all three together
	// over the variant's slices, in cores.
	RunnerCPUus float64 `json:"runner_cpu_us_per_delivery,omitempty"`
	BenchCPUus  float64 `json:"bench_cpu_us_per_delivery,omitempty"`
	Cores       float64 `json:"cores,omitempty"`
	XIDsPer     float64 `json:"xids_per_delivery"`
	CallMS      dist    `json:"call_ms"`
	Notifies    int64   `json:"notifications_received,omitempty"`
	FirstError  string  `json:"first_error,omitempty"`
}

// sqlVariant is a way of ingesting being measured in time slices.
type sqlVariant struct {
	name, mode, provider, space string
	pool                        *pgxpool.Pool
	conns                       int
	call                        func(ctx context.Context, c *pgx.Conn, provider, key, payload string) (string, error)
	eventOf                     func(pos int64) int64
	after                       func(outcome string)
	postmaster                  int

	cursor    atomic.Int64
	mu        sync.Mutex
	calls     int64
	errs      int64
	firstErr  string
	elapsed   time.Duration
	outcomes  map[string]int64
	acked     []int64
	lat       []float64
	wal, xid  int64
	rates     []float64
	pgCPU     time.Duration
	benchCPU  time.Duration
	runnerCPU time.Duration
	// runner is the pid of the runner process an HTTP variant sends to (0:
	// none), whose CPU is then measured per slice too.
	runner int
}

// slice runs the variant with its connections for d, then waits for the
// calls in flight.
func (v *sqlVariant) slice(ctx context.Context, d time.Duration, probe *pgxpool.Pool) {
	before := readWalPos(ctx, probe)
	meter := startCPU(v.runner, v.postmaster)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	var calls atomic.Int64
	for g := 0; g < v.conns; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A variant without a pool (HTTP) calls with a nil connection.
			var c *pgx.Conn
			if v.pool != nil {
				conn, err := v.pool.Acquire(ctx)
				if err != nil {
					v.fail(err)
					return
				}
				defer conn.Release()
				c = conn.Conn()
			}
			var acked []int64
			lat := make([]float64, 0, 4096)
			out := map[string]int64{}
			var errs int64
			for ctx.Err() == nil && time.Now().Before(deadline) {
				ev := v.eventOf(v.cursor.Add(1) - 1)
				key := eventKey(v.space, ev)
				t0 := time.Now()
				outcome, err := v.call(ctx, c, v.provider, key, sumePayload(key))
				lat = append(lat, float64(time.Since(t0))/1e6)
				if err != nil {
					errs++
					v.fail(err)
					continue
				}
				out[outcome]++
				acked = append(acked, ev)
				if v.after != nil {
					v.after(outcome)
				}
			}
			calls.Add(int64(len(lat)))
			v.mu.Lock()
			v.acked = append(v.acked, acked...)
			v.lat = append(v.lat, lat...)
			v.errs += errs
			for k, n := range out {
				v.outcomes[k] += n
			}
			v.mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	selfCPU, runnerCPU, pgCPU := meter.raw()
	after := readWalPos(ctx, probe)
	v.mu.Lock()
	v.calls += calls.Load()
	v.elapsed += el
	v.wal += after.lsn - before.lsn
	v.xid += after.xid - before.xid
	v.rates = append(v.rates, round1(float64(calls.Load())/el.Seconds()))
	v.pgCPU += pgCPU
	v.benchCPU += selfCPU
	v.runnerCPU += runnerCPU
	v.mu.Unlock()
}

func (v *sqlVariant) fail(err error) {
	v.mu.Lock()
	if v.firstErr == "" && !errors.Is(err, context.Canceled) {
		v.firstErr = err.Error()
	}
	v.mu.Unlock()
}

func (v *sqlVariant) result() variantResult {
	r := variantResult{Name: v.name, Conns: v.conns, Mode: v.mode, Deliveries: v.calls, Seconds: round3(v.elapsed.Seconds()),
		SliceRates: v.rates, Errors: v.errs, Outcomes: v.outcomes, CallMS: msDist(v.lat), FirstError: v.firstErr}
	if v.elapsed > 0 {
		r.PerS = round1(float64(v.calls) / v.elapsed.Seconds())
	}
	if v.calls > 0 {
		r.WALBytesPer = round1(float64(v.wal) / float64(v.calls))
		r.XIDsPer = round3(float64(v.xid) / float64(v.calls))
		r.PGCPUus = round1(float64(v.pgCPU) / 1e3 / float64(v.calls))
		r.BenchCPUus = round1(float64(v.benchCPU) / 1e3 / float64(v.calls))
		if v.runner > 0 {
			r.RunnerCPUus = round1(float64(v.runnerCPU) / 1e3 / float64(v.calls))
		}
	}
	if v.elapsed > 0 {
		r.Cores = round3(float64(v.pgCPU+v.benchCPU+v.runnerCPU) / float64(v.elapsed))
	}
	return r
}

func (v *sqlVariant) auditInput(scenario, table string) auditInput {
	seen := map[int64]struct{}{}
	var keys [][2]string
	for _, ev := range v.acked {
		if _, ok := seen[ev]; !ok {
			seen[ev] = struct{}{}
			keys = append(keys, [2]string{v.provider, eventKey(v.space, ev)})
		}
	}
	ca := v.outcomes["created"]
	return auditInput{scenario: scenario, table: table, providers: []string{v.provider}, acked: keys,
		deliveries: v.calls, errors: v.errs, createdAnswers: ca}
}

// warm runs one call on every connection of the pool (prepared statements,
// plpgsql compilation) with keys of a provider no audit looks at.
func warm(ctx context.Context, pool *pgxpool.Pool, n int, call func(context.Context, *pgx.Conn, string, string, string) (string, error)) error {
	var wg sync.WaitGroup
	errc := make(chan error, n)
	conns := make([]*pgxpool.Conn, n)
	for i := range conns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns[i] = c
	}
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := eventKey(fmt.Sprintf("warm%d", time.Now().UnixNano()), int64(i))
			if _, err := call(ctx, c.Conn(), "warmup", key, sumePayload(key)); err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	for _, c := range conns {
		c.Release()
	}
	close(errc)
	return <-errc
}

// interleave runs the variants' slices alternately — a b, b a, a b ... (or
// a b c, c b a ...) — so drift and machine noise hit every variant alike.
func interleave(ctx context.Context, vs []*sqlVariant, rounds int, d time.Duration, probe *pgxpool.Pool) {
	for r := 0; r < rounds && ctx.Err() == nil; r++ {
		order := make([]*sqlVariant, len(vs))
		for i := range vs {
			if r%2 == 0 {
				order[i] = vs[i]
			} else {
				order[i] = vs[len(vs)-1-i]
			}
		}
		for _, v := range order {
			v.slice(ctx, d, probe)
		}
	}
}

// ingestPair is ingest_webhook() against the plain insert, same
// connections, same keys and payloads, in interleaved slices.
type ingestPair struct {
	Conns  int           `json:"conns"`
	Mode   string        `json:"mode"`
	Ingest variantResult `json:"ingest_webhook"`
	Raw    variantResult `json:"plain_insert"`
	Ratio  float64       `json:"ratio"`
	// Digest is ingest_webhook() with body_sha256 (unsigned keys), measured
	// in the same interleaved slices in the unique mode; DigestRatio is its
	// rate over Ingest's.
	Digest      *variantResult `json:"ingest_webhook_digest,omitempty"`
	DigestRatio float64        `json:"digest_ratio,omitempty"`
}

type sqlIngestResult struct {
	SliceSeconds float64      `json:"slice_seconds"`
	Rounds       int          `json:"rounds"`
	StormCopies  int          `json:"storm_copies"`
	StormWindow  int          `json:"storm_window"`
	Pairs        []ingestPair `json:"pairs"`
	Statements   []stmtStat   `json:"statements,omitempty"`
	// CallCosts is the server CPU per call of single statements on one
	// connection: where ingest_webhook()'s cost per call goes.
	CallCosts []callCost `json:"call_costs,omitempty"`
}

// runSQLIngest is scenario 1.
func runSQLIngest(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*sqlIngestResult, []audit, error) {
	dbURL, err := env.scratch(ctx, "sql")
	if err != nil {
		return nil, nil, err
	}
	defer env.dropScratch(context.Background(), "sql")
	maxConns := 0
	for _, c := range cfg.sqlConns {
		maxConns = max(maxConns, c)
	}
	ingest, err := newPool(ctx, dbURL, maxConns, "bench-ingest", "synchronous_commit", "on")
	if err != nil {
		return nil, nil, err
	}
	defer ingest.Close()
	raw, err := newPool(ctx, dbURL, maxConns, "bench-raw", "synchronous_commit", "on")
	if err != nil {
		return nil, nil, err
	}
	defer raw.Close()
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	if err := warm(ctx, ingest, maxConns, callIngest(ingestSQL)); err != nil {
		return nil, nil, fmt.Errorf("warm up ingest: %w", err)
	}
	if err := warm(ctx, raw, maxConns, callRaw); err != nil {
		return nil, nil, fmt.Errorf("warm up plain insert: %w", err)
	}
	pgssReset(ctx, env, probe)

	var backend int
	_ = probe.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	postmaster := postmasterPID(backend)
	st := newStorm(cfg.stormWindow, cfg.stormCopies)
	res := &sqlIngestResult{SliceSeconds: cfg.slice.Seconds(), Rounds: cfg.rounds, StormCopies: cfg.stormCopies, StormWindow: cfg.stormWindow}
	var audits []audit
	for _, conns := range cfg.sqlConns {
		for _, mode := range []string{"unique", "storm"} {
			provider := fmt.Sprintf("s1-%s-%d", mode, conns)
			eventOf := func(pos int64) int64 { return pos }
			if mode == "storm" {
				eventOf = st.event
			}
			mk := func(name string, pool *pgxpool.Pool, call func(context.Context, *pgx.Conn, string, string, string) (string, error)) *sqlVariant {
				return &sqlVariant{name: name, mode: mode, provider: provider, space: provider, pool: pool, conns: conns,
					call: call, eventOf: eventOf, outcomes: map[string]int64{}, postmaster: postmaster}
			}
			vi := mk("ingest_webhook", ingest, callIngest(ingestSQL))
			vr := mk("plain_insert", raw, callRaw)
			vs := []*sqlVariant{vi, vr}
			var vd *sqlVariant
			if mode == "unique" {
				vd = mk("ingest_webhook_digest", ingest, callIngestDigest)
				vd.provider, vd.space = provider+"-digest", provider+"-digest"
				vs = append(vs, vd)
			}
			log.Info("sql ingest", "conns", conns, "mode", mode)
			interleave(ctx, vs, cfg.rounds, cfg.slice, probe)
			if err := ctx.Err(); err != nil {
				return res, audits, err
			}
			p := ingestPair{Conns: conns, Mode: mode, Ingest: vi.result(), Raw: vr.result()}
			if p.Raw.PerS > 0 {
				p.Ratio = round3(p.Ingest.PerS / p.Raw.PerS)
			}
			if vd != nil {
				d := vd.result()
				p.Digest = &d
				if p.Ingest.PerS > 0 {
					p.DigestRatio = round3(d.PerS / p.Ingest.PerS)
				}
			}
			res.Pairs = append(res.Pairs, p)
			a, err := runAudit(ctx, probe, vi.auditInput(fmt.Sprintf("sql %s %d conns", mode, conns), ""))
			if err != nil {
				return res, audits, err
			}
			audits = append(audits, a)
			if !cfg.quick { // the ceiling's own audit, a check on the harness
				ra := vr.auditInput(fmt.Sprintf("plain insert %s %d conns (ceiling)", mode, conns), "bench.raw")
				ar, err := runAudit(ctx, probe, ra)
				if err != nil {
					return res, audits, err
				}
				audits = append(audits, ar)
			}
			log.Info("sql ingest done", "conns", conns, "mode", mode, "ingest_per_s", p.Ingest.PerS, "raw_per_s", p.Raw.PerS, "ratio", p.Ratio)
		}
	}
	res.Statements = pgssTop(ctx, env, probe, 8)
	res.CallCosts = ingestCallCosts(ctx, dbURL, probe, cfg.callN)
	return res, audits, nil
}

// ingestCallCosts measures the server CPU per call of ingest_webhook()
// against the plain insert, and of a copy of ingest_webhook() without
// SECURITY DEFINER and its fixed search_path (bench.ingest_webhook, the same name so its body's ingest_webhook.<arg> labels still resolve), so the
// report can say what the function call costs and what least privilege
// adds. New keys come from gen_random_uuid() in the statement itself.
func ingestCallCosts(ctx context.Context, dbURL string, probe *pgxpool.Pool, n int) []callCost {
	var def string
	if err := probe.QueryRow(ctx, `SELECT pg_get_functiondef('webhooks.ingest_webhook(text,text,text,jsonb,text,boolean,bytea)'::regprocedure)`).Scan(&def); err != nil {
		return nil
	}
	def = strings.Replace(def, "FUNCTION webhooks.ingest_webhook(", "FUNCTION bench.ingest_webhook(", 1)
	def = strings.Replace(def, " SECURITY DEFINER\n", "\n", 1)
	def = strings.Replace(def, " SET search_path TO 'pg_catalog', 'pg_temp'\n", "\n", 1)
	if _, err := probe.Exec(ctx, def); err != nil {
		return nil
	}
	var stillDefiner bool
	if err := probe.QueryRow(ctx, `SELECT prosecdef OR proconfig IS NOT NULL FROM pg_proc
		WHERE oid = 'bench.ingest_webhook(text,text,text,jsonb,text,boolean,bytea)'::regprocedure`).Scan(&stillDefiner); err != nil || stillDefiner {
		return nil // the copy did not come out as intended: measure nothing rather than mislead
	}
	for _, q := range []string{
		`SELECT webhooks.ingest_webhook('cc', 'dup', 't', '{"a": 1}')`,
		`INSERT INTO bench.raw (provider, external_id, event_type, payload) VALUES ('cc', 'dup', 't', '{"a": 1}')`,
		`SELECT webhooks.ingest_webhook('ccd', 'dup', 't', '{"a": 1}', body_sha256 => sha256('dup'::bytea))`,
	} {
		if _, err := probe.Exec(ctx, q); err != nil {
			return nil
		}
	}
	return measureCalls(ctx, dbURL, n, [][2]string{
		{`SELECT 1`, "a round trip, for scale"},
		{`INSERT INTO bench.raw (provider, external_id, event_type, payload, source) VALUES ('cc', gen_random_uuid()::text, 't', '{"a": 1}', 'webhook') ON CONFLICT (provider, external_id) DO NOTHING`, "plain insert, new key (the ceiling's statement)"},
		{`SELECT event_id, outcome FROM webhooks.ingest_webhook('cc', gen_random_uuid()::text, 't', '{"a": 1}')`, "ingest_webhook(), new key"},
		{`SELECT event_id, outcome FROM bench.ingest_webhook('cc2', gen_random_uuid()::text, 't', '{"a": 1}')`, "the same body without SECURITY DEFINER and its SET search_path, new key"},
		{`INSERT INTO bench.raw (provider, external_id, event_type, payload, source) VALUES ('cc', 'dup', 't', '{"a": 1}', 'webhook') ON CONFLICT (provider, external_id) DO NOTHING`, "plain insert, duplicate"},
		{`SELECT event_id, outcome FROM webhooks.ingest_webhook('cc', 'dup', 't', '{"a": 1}')`, "ingest_webhook(), duplicate"},
		{`SELECT event_id, outcome FROM bench.ingest_webhook('cc', 'dup', 't', '{"a": 1}')`, "the same body without SECURITY DEFINER, duplicate"},
		{`SELECT event_id, outcome FROM webhooks.ingest_webhook('ccd', gen_random_uuid()::text, 't', '{"a": 1}', body_sha256 => sha256(convert_to(gen_random_uuid()::text, 'UTF8')))`, "ingest_webhook() with a body digest (keys from unsigned headers), new key and body"},
		{`SELECT event_id, outcome FROM webhooks.ingest_webhook('ccd', 'dup', 't', '{"a": 1}', body_sha256 => sha256('dup'::bytea))`, "ingest_webhook() with a body digest, duplicate by key"},
		{`SELECT event_id, outcome FROM webhooks.ingest_webhook('ccd', gen_random_uuid()::text, 't', '{"a": 1}', body_sha256 => sha256('dup'::bytea))`, "ingest_webhook() with a body digest, a stored body under a fresh key (a replayed capture)"},
	})
}

// notifyResult is scenario 6: what NOTIFY costs the ingest path.
type notifyResult struct {
	Conns        int             `json:"conns"`
	SliceSeconds float64         `json:"slice_seconds"`
	Rounds       int             `json:"rounds"`
	Variants     []variantResult `json:"variants"`
	// RatioToNone is each variant's rate over the no-NOTIFY rate.
	RatioToNone map[string]float64 `json:"ratio_to_none"`
}

// runNotify is scenario 6: ingest with no NOTIFY, with the runner's
// coalesced NOTIFY (the runner's notifier, internal/notify: at most one pg_notify per 50 ms, in its
// own statement after the deliveries committed) and with a NOTIFY inside
// every ingest transaction (notify => true). A listener is connected the
// whole time, as a runner's would be.
func runNotify(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*notifyResult, []audit, error) {
	dbURL, err := env.scratch(ctx, "notify")
	if err != nil {
		return nil, nil, err
	}
	defer env.dropScratch(context.Background(), "notify")
	conns := cfg.notifyConns
	pools := map[string]*pgxpool.Pool{}
	for _, name := range []string{"none", "coalesced", "per_row"} {
		p, err := newPool(ctx, dbURL, conns, "bench-notify-"+name, "synchronous_commit", "on")
		if err != nil {
			return nil, nil, err
		}
		defer p.Close()
		pools[name] = p
	}
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	side, err := newPool(ctx, dbURL, 2, "bench-notifier")
	if err != nil {
		return nil, nil, err
	}
	defer side.Close()

	// The listener: counts every notification on webhooks_events.
	lctx, stopListen := context.WithCancel(ctx)
	defer stopListen()
	lconn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, nil, err
	}
	defer lconn.Close(context.Background())
	if _, err := lconn.Exec(ctx, `LISTEN webhooks_events`); err != nil {
		return nil, nil, err
	}
	var received atomic.Int64
	ldone := make(chan struct{})
	go func() {
		defer close(ldone)
		for {
			if _, err := lconn.WaitForNotification(lctx); err != nil {
				return
			}
			received.Add(1)
		}
	}()

	notifier := notify.NewNotifier(side, 50*time.Millisecond, metrics.New(side), log.With("component", "notifier"))
	nctx, stopNotifier := context.WithCancel(ctx)
	defer stopNotifier()
	go notifier.Run(nctx)

	var backend int
	_ = probe.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	postmaster := postmasterPID(backend)
	mk := func(name string, call func(context.Context, *pgx.Conn, string, string, string) (string, error), after func(string)) *sqlVariant {
		provider := "s6-" + name
		return &sqlVariant{name: name, mode: "unique", provider: provider, space: provider, pool: pools[name], conns: conns,
			call: call, eventOf: func(p int64) int64 { return p }, after: after, outcomes: map[string]int64{}, postmaster: postmaster}
	}
	vs := []*sqlVariant{
		mk("none", callIngest(ingestSQL), nil),
		mk("coalesced", callIngest(ingestSQL), func(o string) {
			if o != "duplicate" {
				notifier.Signal()
			}
		}),
		mk("per_row", callIngest(ingestNotifySQL), nil),
	}
	for _, v := range vs {
		if err := warm(ctx, v.pool, conns, v.call); err != nil {
			return nil, nil, fmt.Errorf("warm up %s: %w", v.name, err)
		}
	}
	res := &notifyResult{Conns: conns, SliceSeconds: cfg.slice.Seconds(), Rounds: cfg.rounds, RatioToNone: map[string]float64{}}
	// Count notifications per variant: slices run one at a time, so the
	// counter's movement during a slice belongs to it.
	counts := map[string]int64{}
	for r := 0; r < cfg.rounds && ctx.Err() == nil; r++ {
		order := []*sqlVariant{vs[0], vs[1], vs[2]}
		if r%2 == 1 {
			order = []*sqlVariant{vs[2], vs[1], vs[0]}
		}
		for _, v := range order {
			before := received.Load()
			v.slice(ctx, cfg.slice, probe)
			time.Sleep(150 * time.Millisecond) // the last coalesced NOTIFY arrives
			counts[v.name] += received.Load() - before
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	stopNotifier()
	stopListen()
	<-ldone
	var audits []audit
	for _, v := range vs {
		r := v.result()
		r.Notifies = counts[v.name]
		res.Variants = append(res.Variants, r)
		a, err := runAudit(ctx, probe, v.auditInput("notify "+v.name, ""))
		if err != nil {
			return res, audits, err
		}
		audits = append(audits, a)
	}
	if none := res.Variants[0].PerS; none > 0 {
		for _, v := range res.Variants {
			res.RatioToNone[v.Name] = round3(v.PerS / none)
		}
	}
	log.Info("notify cost", "none", res.Variants[0].PerS, "coalesced", res.Variants[1].PerS, "per_row", res.Variants[2].PerS)
	return res, audits, nil
}
