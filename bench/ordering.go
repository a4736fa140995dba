package main

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pginbox/pginbox"
)

// orderingPoint is one workload of the ordering scenario, processed twice
// with the same handler, lease and workers: once by a provider with strict
// order per key (webhooks.set_ordering), once by a provider without it.
type orderingPoint struct {
	Lease  string `json:"lease"`
	Keys   int    `json:"keys"`
	PerKey int    `json:"events_per_key"`
	// Events is how many events each side processed (summed over rounds).
	Events        int64   `json:"events"`
	OrderedPerS   float64 `json:"ordered_per_s"`
	UnorderedPerS float64 `json:"unordered_per_s"`
	// Ratio is OrderedPerS over UnorderedPerS.
	Ratio float64 `json:"ratio"`
	// Violations counts events of the ordered side whose handler started
	// before the handler of an earlier event of their key (must be 0);
	// Inversions the same count on the unordered side, which shows the
	// events did arrive out of order.
	Violations int64 `json:"order_violations"`
	Inversions int64 `json:"unordered_inversions"`
	Rounds     int   `json:"rounds"`
	Audit      bool  `json:"audit_ok"`
}

// orderingIngest is ingest_webhook() on a provider without ordering in the
// schema before ordered processing (migrated up to the migration before the
// one that creates webhooks.ordering) and in this one, and on a provider with
// ordering, as many connections each, interleaved slices, a database each.
type orderingIngest struct {
	Conns int `json:"conns"`
	// BeforeVersion is the migration the "before" database stops at; 0
	// with BeforeNote saying why it was not measured.
	BeforeVersion int64          `json:"before_version"`
	BeforeNote    string         `json:"before_note,omitempty"`
	Before        *variantResult `json:"before,omitempty"`
	Unordered     variantResult  `json:"unordered"`
	Ordered       variantResult  `json:"ordered"`
	// UnorderedVsBefore and OrderedVsUnordered are rate ratios.
	UnorderedVsBefore  float64 `json:"unordered_vs_before,omitempty"`
	OrderedVsUnordered float64 `json:"ordered_vs_unordered"`
}

// orderingResult is the ordering scenario.
type orderingResult struct {
	KeyPath   string          `json:"key_path"`
	OrderPath string          `json:"order_path"`
	Workers   int             `json:"workers"`
	Batch     int             `json:"batch"`
	Points    []orderingPoint `json:"points"`
	Ingest    *orderingIngest `json:"ingest,omitempty"`
}

// find returns the point of a shape and lease, nil when it did not run.
func (o *orderingResult) find(keys, perKey int, lease string) *orderingPoint {
	if o == nil {
		return nil
	}
	for i := range o.Points {
		if p := &o.Points[i]; p.Keys == keys && p.PerKey == perKey && p.Lease == lease {
			return p
		}
	}
	return nil
}

// Stripe-shaped events: the customer is the key, created the order.
const (
	orderingKeyPath   = "$.data.object.customer"
	orderingOrderPath = "$.created"
)

// orderingPayload is event j of key k, Stripe-shaped, about the size of the
// other scenarios' payloads.
func orderingPayload(id string, k, j int) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","type":"customer.subscription.updated","created":%d,"data":{"object":{"customer":"cus_%05d","status":"active","note":%q}}}`,
		id, 1_760_000_000+j, k, padding)
}

// ingestShuffled stores keys × perKey events for provider through
// webhooks.ingest_webhook(), in an order shuffled with seed (so arrival
// order, and id order, differ from the order within each key), 250 per
// statement.
func ingestShuffled(ctx context.Context, pool *pgxpool.Pool, provider string, keys, perKey int, seed uint64) error {
	type ev struct{ k, j int }
	all := make([]ev, 0, keys*perKey)
	for k := 0; k < keys; k++ {
		for j := 0; j < perKey; j++ {
			all = append(all, ev{k, j})
		}
	}
	r := rand.New(rand.NewPCG(seed, 0x6f72646572))
	r.Shuffle(len(all), func(a, b int) { all[a], all[b] = all[b], all[a] })
	for lo := 0; lo < len(all); lo += 250 {
		hi := min(lo+250, len(all))
		ids := make([]string, 0, hi-lo)
		bodies := make([]string, 0, hi-lo)
		for _, e := range all[lo:hi] {
			id := fmt.Sprintf("evt_%s_%d_%d", provider, e.k, e.j)
			ids = append(ids, id)
			bodies = append(bodies, orderingPayload(id, e.k, e.j))
		}
		// One call per row, in array order (ids grow in that order).
		if _, err := pool.Exec(ctx, `
			SELECT i.event_id FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(id, body, n)
			CROSS JOIN LATERAL webhooks.ingest_webhook($1, u.id, 'customer.subscription.updated', u.body::jsonb) AS i
			ORDER BY u.n`, provider, ids, bodies); err != nil {
			return fmt.Errorf("ingest %s: %w", provider, err)
		}
	}
	_, err := pool.Exec(ctx, `ANALYZE webhooks.events`)
	return err
}

// handlerInversions counts events of provider whose handler started before
// the handler of an event of the same key with a smaller created.
func handlerInversions(ctx context.Context, pool *pgxpool.Pool, provider string) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `
		SELECT count(*) FROM (
		    SELECT h.at, max(h.at) OVER (PARTITION BY e.payload #>> '{data,object,customer}'
		                                 ORDER BY (e.payload ->> 'created')::bigint
		                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier
		    FROM bench.handled AS h JOIN webhooks.events AS e ON e.id = h.event_id
		    WHERE e.provider = $1) AS x
		WHERE x.at < x.earlier`, provider).Scan(&n)
	return n, err
}

// runOrdering is the ordering scenario: for each shape (keys × events per
// key) the same events are ingested once, in random order, for a provider
// with ordering and one without; every run then starts from a copy of what
// that ingest stored (rows copied back as they were, held events included:
// the triggers that keep sequences settled fire on updates and deletes, not
// on inserts), so the rounds and lease modes process identical queues
// without paying the ordered ingest again. Then the ingest comparison.
func runOrdering(ctx context.Context, env *pgEnv, cfg config, log *slog.Logger) (*orderingResult, []audit, error) {
	dbURL, err := env.scratch(ctx, "ordering")
	if err != nil {
		return nil, nil, err
	}
	defer env.dropScratch(context.Background(), "ordering")
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	if _, err := probe.Exec(ctx, `CREATE TABLE bench.order_snapshot (LIKE webhooks.events)`); err != nil {
		return nil, nil, err
	}
	// Every stored column but the generated ones (seq).
	var cols string
	if err := probe.QueryRow(ctx, `SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)
		FROM pg_attribute AS a WHERE a.attrelid = 'webhooks.events'::regclass AND a.attnum > 0
		  AND NOT a.attisdropped AND a.attgenerated = ''`).Scan(&cols); err != nil {
		return nil, nil, err
	}
	res := &orderingResult{KeyPath: orderingKeyPath, OrderPath: orderingOrderPath, Workers: 8, Batch: 100}
	var audits []audit
	limit := 30 * time.Second
	side := map[bool]string{true: "ordered", false: "unordered"}
	for _, shape := range cfg.orderingShapes {
		keys, perKey := shape[0], shape[1]
		provider := map[bool]string{}
		for _, ordered := range []bool{true, false} {
			provider[ordered] = fmt.Sprintf("o-%dx%d-%s", keys, perKey, side[ordered])
			if ordered {
				if _, err := probe.Exec(ctx, `SELECT webhooks.set_ordering($1, $2, $3)`, provider[ordered], orderingKeyPath, orderingOrderPath); err != nil {
					return res, audits, fmt.Errorf("set_ordering: %w", err)
				}
			}
			t0 := time.Now()
			// The same events on both sides.
			if err := ingestShuffled(ctx, probe, provider[ordered], keys, perKey, uint64(keys)); err != nil {
				return res, audits, err
			}
			log.Info("ordering ingest of the workload", "keys", keys, "per_key", perKey, "side", side[ordered], "s", round1(time.Since(t0).Seconds()))
		}
		if _, err := probe.Exec(ctx, `
			TRUNCATE bench.order_snapshot;
			INSERT INTO bench.order_snapshot SELECT * FROM webhooks.events;
			TRUNCATE webhooks.inbox, webhooks.history, webhooks.keys, webhooks.order_marks, bench.handled CASCADE`); err != nil {
			return res, audits, fmt.Errorf("snapshot: %w", err)
		}
		for _, lease := range cfg.orderingLeases {
			pt := orderingPoint{Lease: lease, Keys: keys, PerKey: perKey, Audit: true}
			var n [2]int64
			var secs [2]float64
			for round := 0; round < cfg.orderingRounds && ctx.Err() == nil; round++ {
				sides := []bool{true, false}
				if round%2 == 1 {
					sides = []bool{false, true}
				}
				for _, ordered := range sides {
					p := provider[ordered]
					if _, err := probe.Exec(ctx, `INSERT INTO webhooks.events (`+cols+`) OVERRIDING SYSTEM VALUE
						SELECT `+cols+` FROM bench.order_snapshot WHERE provider = $1`, p); err != nil {
						return res, audits, fmt.Errorf("restore %s: %w", p, err)
					}
					if _, err := probe.Exec(ctx, `ANALYZE webhooks.events`); err != nil {
						return res, audits, err
					}
					if _, _, err := runWorkersOpt(ctx, dbURL, probe, res.Workers, res.Batch, lease, limit, log); err != nil {
						return res, audits, err
					}
					got, s, _ := handledRate(ctx, probe, p)
					inv, err := handlerInversions(ctx, probe, p)
					if err != nil {
						return res, audits, fmt.Errorf("order audit: %w", err)
					}
					a, err := runAudit(ctx, probe, auditInput{scenario: fmt.Sprintf("ordering %d keys × %d, %s, %s (round %d)", keys, perKey, lease, side[ordered], round+1),
						providers: []string{p}, handler: true, preloaded: true, createdAnswers: -1})
					if err != nil {
						return res, audits, err
					}
					if ordered && inv > 0 {
						a.OK = false
						a.Problems = append(a.Problems, fmt.Sprintf("%d events ran before an earlier event of their key", inv))
					}
					audits = append(audits, a)
					i := 0
					if ordered {
						pt.Violations += inv
					} else {
						i = 1
						pt.Inversions += inv
					}
					n[i] += got
					secs[i] += s
					pt.Audit = pt.Audit && a.OK
					log.Info("ordering", "keys", keys, "per_key", perKey, "lease", lease, "side", side[ordered], "round", round,
						"per_s", round1(float64(got)/max(s, 1e-9)), "inversions", inv, "audit", a.OK)
					if _, err := probe.Exec(ctx, `TRUNCATE webhooks.inbox, webhooks.history, webhooks.keys, webhooks.order_marks, bench.handled CASCADE`); err != nil {
						return res, audits, err
					}
				}
				pt.Rounds++
			}
			if secs[0] > 0 && secs[1] > 0 {
				pt.Events = n[0]
				pt.OrderedPerS = round1(float64(n[0]) / secs[0])
				pt.UnorderedPerS = round1(float64(n[1]) / secs[1])
				pt.Ratio = round3(pt.OrderedPerS / pt.UnorderedPerS)
			}
			res.Points = append(res.Points, pt)
		}
	}
	if ctx.Err() != nil {
		return res, audits, ctx.Err()
	}
	ing, a, err := orderingIngestRates(ctx, env, cfg, dbURL, probe, log)
	res.Ingest = ing
	audits = append(audits, a...)
	return res, audits, err
}

// createOrdering matches the statement that creates webhooks.ordering.
var createOrdering = regexp.MustCompile(`(?i)create\s+table\s+(if\s+not\s+exists\s+)?webhooks\.ordering\b`)

// versionBeforeOrdering is the migration just before the one that creates
// webhooks.ordering: the schema as it was without ordered processing.
func versionBeforeOrdering() (int64, error) {
	return versionBefore(createOrdering, "webhooks.ordering")
}

// versionBefore is the migration just before the first one whose text
// matches re (the one that creates what).
func versionBefore(re *regexp.Regexp, what string) (int64, error) {
	fsys, err := pginbox.Migrations()
	if err != nil {
		return 0, err
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return 0, err
	}
	slices.Sort(names)
	for i, name := range names {
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return 0, err
		}
		if re.Match(body) {
			if i == 0 {
				return 0, fmt.Errorf("%s is the first migration", name)
			}
			return strconv.ParseInt(names[i-1][:5], 10, 64)
		}
	}
	return 0, fmt.Errorf("no migration creates %s", what)
}

// beforeDB creates the scratch database name (dropped with dropScratch),
// migrated up to version, with the bench's own schema, and returns its URL.
func beforeDB(ctx context.Context, env *pgEnv, name string, version int64) (string, error) {
	if err := env.createDB(ctx, env.prefix+name, ""); err != nil {
		return "", err
	}
	url := env.url(env.prefix + name)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS webhooks`); err != nil {
		return "", err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := pginbox.NewMigrationProvider(db)
	if err != nil {
		return "", err
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return "", fmt.Errorf("migrate up to %d: %w", version, err)
	}
	if _, err := pool.Exec(ctx, benchSchema); err != nil {
		return "", fmt.Errorf("bench schema: %w", err)
	}
	return url, nil
}

// orderingIngestRates measures ingest_webhook() on a provider without
// ordering before and after ordered processing existed, and on a provider
// with it, in interleaved slices of 16 connections, unique ids. Each of the
// three stores into a database of its own, so none of them inserts into
// indexes that another's rows made larger: the provider without ordering
// runs in a current database where another provider is ordered (ordering
// is on, as in a deployment that uses it), the ordered one in the
// scenario's database.
func orderingIngestRates(ctx context.Context, env *pgEnv, cfg config, dbURL string, probe *pgxpool.Pool, log *slog.Logger) (*orderingIngest, []audit, error) {
	const conns = 16
	res := &orderingIngest{Conns: conns}
	after, err := newPool(ctx, dbURL, conns, "bench-ingest", "synchronous_commit", "on")
	if err != nil {
		return nil, nil, err
	}
	defer after.Close()
	if _, err := probe.Exec(ctx, `SELECT webhooks.set_ordering('oi-ordered', '$.job_id', '$.created_at')`); err != nil {
		return nil, nil, fmt.Errorf("set_ordering: %w", err)
	}
	unURL, err := env.scratch(ctx, "ordering-unordered")
	if err != nil {
		return nil, nil, err
	}
	defer env.dropScratch(context.Background(), "ordering-unordered")
	unPool, err := newPool(ctx, unURL, conns, "bench-ingest", "synchronous_commit", "on")
	if err != nil {
		return nil, nil, err
	}
	defer unPool.Close()
	unProbe, err := newPool(ctx, unURL, 2, "bench-probe")
	if err != nil {
		return nil, nil, err
	}
	defer unProbe.Close()
	if _, err := unProbe.Exec(ctx, `SELECT webhooks.set_ordering('oi-ordered', '$.job_id', '$.created_at')`); err != nil {
		return nil, nil, fmt.Errorf("set_ordering: %w", err)
	}
	if err := warm(ctx, unPool, conns, callIngest(ingestSQL)); err != nil {
		return nil, nil, fmt.Errorf("warm up ingest without ordering: %w", err)
	}
	var backend int
	_ = probe.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	postmaster := postmasterPID(backend)
	mk := func(name, provider string, pool *pgxpool.Pool) *sqlVariant {
		return &sqlVariant{name: name, mode: "unique", provider: provider, space: provider, pool: pool, conns: conns,
			call: callIngest(ingestSQL), eventOf: func(pos int64) int64 { return pos }, outcomes: map[string]int64{}, postmaster: postmaster}
	}
	vu := mk("unordered", "oi-unordered", unPool)
	vo := mk("ordered", "oi-ordered", after)
	vs := []*sqlVariant{vu, vo}
	var vb *sqlVariant
	var beforeProbe *pgxpool.Pool
	version, verr := versionBeforeOrdering()
	if verr == nil {
		var burl string
		burl, verr = beforeDB(ctx, env, "before", version)
		if verr == nil {
			defer env.dropScratch(context.Background(), "before")
			before, err := newPool(ctx, burl, conns, "bench-ingest", "synchronous_commit", "on")
			if err != nil {
				return nil, nil, err
			}
			defer before.Close()
			if beforeProbe, err = newPool(ctx, burl, 2, "bench-probe"); err != nil {
				return nil, nil, err
			}
			defer beforeProbe.Close()
			if err := warm(ctx, before, conns, callIngest(ingestSQL)); err != nil {
				return nil, nil, fmt.Errorf("warm up before: %w", err)
			}
			vb = mk("before", "oi-before", before)
			vs = append([]*sqlVariant{vb}, vs...)
			res.BeforeVersion = version
		}
	}
	if verr != nil {
		res.BeforeNote = verr.Error()
		log.Warn("ordering ingest: no before-ordering schema", "error", verr)
	}
	if err := warm(ctx, after, conns, callIngest(ingestSQL)); err != nil {
		return nil, nil, fmt.Errorf("warm up ingest: %w", err)
	}
	log.Info("ordering ingest", "conns", conns, "before_version", res.BeforeVersion)
	interleave(ctx, vs, cfg.rounds, cfg.slice, probe)
	if err := ctx.Err(); err != nil {
		return res, nil, err
	}
	res.Unordered, res.Ordered = vu.result(), vo.result()
	if res.Unordered.PerS > 0 {
		res.OrderedVsUnordered = round3(res.Ordered.PerS / res.Unordered.PerS)
	}
	var audits []audit
	for _, v := range []struct {
		*sqlVariant
		probe *pgxpool.Pool
	}{{vu, unProbe}, {vo, probe}} {
		a, err := runAudit(ctx, v.probe, v.auditInput("ordering ingest, "+v.name+" provider", ""))
		if err != nil {
			return res, audits, err
		}
		audits = append(audits, a)
	}
	if vb != nil {
		b := vb.result()
		res.Before = &b
		if b.PerS > 0 {
			res.UnorderedVsBefore = round3(res.Unordered.PerS / b.PerS)
		}
		a, err := runAudit(ctx, beforeProbe, vb.auditInput("ordering ingest, before ordering existed", ""))
		if err != nil {
			return res, audits, err
		}
		audits = append(audits, a)
	}
	log.Info("ordering ingest done", "before_per_s", ratePtr(res.Before), "unordered_per_s", res.Unordered.PerS, "ordered_per_s", res.Ordered.PerS)
	return res, audits, nil
}

func ratePtr(v *variantResult) float64 {
	if v == nil {
		return 0
	}
	return v.PerS
}

// orderingRows are the ordering scenario's lines of the printed table.
func orderingRows(o *orderingResult) []string {
	if o == nil {
		return nil
	}
	var out []string
	for _, p := range o.Points {
		out = append(out, fmt.Sprintf("ordered processing, %s keys × %d, %s\t%s/s\tunordered %s/s, ratio %.2f; %d order violations (unordered: %d inversions)",
			num(float64(p.Keys)), p.PerKey, p.Lease, num(p.OrderedPerS), num(p.UnorderedPerS), p.Ratio, p.Violations, p.Inversions))
	}
	if i := o.Ingest; i != nil {
		before := "not measured: " + i.BeforeNote
		if i.Before != nil {
			before = fmt.Sprintf("before ordering (schema %05d) %s/s, ratio %.2f", i.BeforeVersion, num(i.Before.PerS), i.UnorderedVsBefore)
		}
		out = append(out, fmt.Sprintf("SQL ingest, provider without ordering, %d conns\t%s/s\t%s", i.Conns, num(i.Unordered.PerS), before))
		out = append(out, fmt.Sprintf("SQL ingest, provider with ordering, %d conns\t%s/s\t%.2f× of without", i.Conns, num(i.Ordered.PerS), i.OrderedVsUnordered))
	}
	return out
}
