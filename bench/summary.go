package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

type phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// results is everything one run measured.
type results struct {
	Quick    bool
	Durable  bool
	Started  time.Time
	Finished time.Time
	Machine  machineInfo
	Postgres pgInfo
	SQL      *sqlIngestResult
	Notify   *notifyResult
	HTTP     *httpResult
	// GroupCommit is HTTP ingest with and without group commit against the
	// plain insert, same number of senders.
	GroupCommit *groupCommitResult
	Process     *processResult
	Variants    *variantsResult
	Latency     *latencyResult
	Growth      *growthResult
	Retention   *retentionResult
	Upgrade     *upgradeResult
	Backfill    *backfillResult `json:"backfill,omitempty"`
	Pooler      *poolerResult
	Ordering    *orderingResult
	Traces      *tracesResult
	Audits      []audit
	Errors      []string
	Durations   []phase
}

type latencyKeys struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// target is one goal of the issue, met or not, with the margin.
type target struct {
	Name      string  `json:"name"`
	Goal      string  `json:"goal"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Unit      string  `json:"unit"`
	Met       bool    `json:"met"`
	Measured  bool    `json:"measured"`
	Margin    string  `json:"margin"`
}

// summary is bench/out/summary.json: the documented keys first, then
// everything else.
type summary struct {
	Deliveries     int64       `json:"deliveries"`
	DistinctEvents int64       `json:"distinct_events"`
	Created        int64       `json:"created"`
	Processed      int64       `json:"processed"`
	ProcessedTwice int64       `json:"processed_twice"`
	Lost           int64       `json:"lost"`
	IngestSQLPerS  float64     `json:"ingest_sql_per_s"`
	RawInsertPerS  float64     `json:"raw_insert_per_s"`
	IngestHTTPPerS float64     `json:"ingest_http_per_s"`
	ProcessPerS    float64     `json:"process_per_s"`
	LatencyMS      latencyKeys `json:"latency_ms"`

	AuditOK        bool    `json:"audit_ok"`
	RejectedRows   int64   `json:"rejected_rows"`
	IngestSQLRatio float64 `json:"ingest_sql_ratio"`
	HTTPRatio      float64 `json:"ingest_http_ratio_to_ceiling"`
	HTTPp99MS      float64 `json:"ingest_http_p99_ms"`
	// Group commit: unique signed deliveries from 64 senders with group
	// commit and alone, and the plain single-row insert with 64 connections.
	HTTPBatchedPerS   float64 `json:"ingest_http_batched_per_s,omitempty"`
	HTTPAlonePerS     float64 `json:"ingest_http_alone_per_s,omitempty"`
	Raw64PerS         float64 `json:"raw_insert_64_per_s,omitempty"`
	HTTPBatchedRatio  float64 `json:"ingest_http_batched_vs_raw_64,omitempty"`
	HTTPBatchedP99MS  float64 `json:"ingest_http_batched_p99_ms,omitempty"`
	LatencyP99At1k    float64 `json:"latency_p99_ms_1000_per_s"`
	LatencyP99Cross   float64 `json:"latency_p99_ms_cross_runner"`
	LatencyP99Cross1k float64 `json:"latency_p99_ms_cross_runner_1000_per_s"`
	LatencyP99Poll    float64 `json:"latency_p99_ms_poll_only"`
	LatencyP99Poll1k  float64 `json:"latency_p99_ms_poll_only_1000_per_s"`
	// WALPerEvent is WAL bytes per event at the default processing point;
	// RiverJobsPerS River's work benchmark in the same run (only when the
	// peer ran) and ProcessVsRiver the row-lock variant's events/s over it,
	// measured side by side on the same number of events.
	WALPerEvent    float64  `json:"wal_bytes_per_event"`
	RiverJobsPerS  *float64 `json:"river_jobs_per_s,omitempty"`
	ProcessVsRiver *float64 `json:"process_vs_river,omitempty"`
	// storageKeys: growth ratios, prune's time, WAL and the ingest's wait
	// during it, the upgrade's rates (storage_summary.go).
	storageKeys

	Quick     bool        `json:"quick"`
	Durable   bool        `json:"durable"`
	Started   time.Time   `json:"started"`
	Seconds   float64     `json:"seconds"`
	Targets   []target    `json:"targets"`
	Machine   machineInfo `json:"machine"`
	Postgres  pgInfo      `json:"postgres"`
	Scenarios scenarios   `json:"scenarios"`
	Audits    []audit     `json:"audits"`
	Errors    []string    `json:"errors,omitempty"`
	Phases    []phase     `json:"phases"`
}

type scenarios struct {
	SQL  *sqlIngestResult `json:"sql_ingest,omitempty"`
	HTTP *httpResult      `json:"http_ingest,omitempty"`
	// GroupCommit is HTTP ingest with group commit, alone and the plain
	// insert side by side.
	GroupCommit *groupCommitResult `json:"group_commit,omitempty"`
	Process     *processResult     `json:"processing,omitempty"`
	// Variants is the side-by-side table of processing variants and River.
	Variants *variantsResult `json:"processing_variants,omitempty"`
	Latency  *latencyResult  `json:"wakeup_latency,omitempty"`
	Growth   *growthResult   `json:"growth,omitempty"`
	// Retention is prune() on the growth scenario's history under ingest.
	Retention *retentionResult `json:"retention,omitempty"`
	// Upgrade is a v0.2 database migrated to storage v2 and moved.
	Upgrade *upgradeResult `json:"upgrade,omitempty"`
	Notify  *notifyResult  `json:"notify_cost,omitempty"`
	Pooler  *poolerResult  `json:"pooler,omitempty"`
	// Ordering is ordered processing per key against unordered, and ingest
	// without ordering against the schema before it.
	Ordering *orderingResult `json:"ordering,omitempty"`
	// Traces is the OpenTelemetry tracing overhead (off, 100%, 1%).
	Traces *tracesResult `json:"tracing_overhead,omitempty"`
}

// ceilingAudit marks audits of the bench's own yardsticks (the plain
// insert, the server-side batch): checked, but not counted as pginbox's
// deliveries.
func ceilingAudit(a audit) bool {
	return strings.Contains(a.Scenario, "(ceiling)") || strings.Contains(a.Scenario, "(yardstick)")
}

func (r *results) sqlPair(conns int, mode string) *ingestPair {
	if r.SQL == nil {
		return nil
	}
	for i := range r.SQL.Pairs {
		if r.SQL.Pairs[i].Conns == conns && r.SQL.Pairs[i].Mode == mode {
			return &r.SQL.Pairs[i]
		}
	}
	return nil
}

func (r *results) summary() summary {
	s := summary{AuditOK: true, Quick: r.Quick, Durable: r.Durable, Started: r.Started,
		Seconds: round1(r.Finished.Sub(r.Started).Seconds()), Machine: r.Machine, Postgres: r.Postgres,
		Audits: r.Audits, Errors: r.Errors, Phases: r.Durations,
		Scenarios: scenarios{SQL: r.SQL, HTTP: r.HTTP, GroupCommit: r.GroupCommit, Process: r.Process, Variants: r.Variants, Latency: r.Latency, Growth: r.Growth, Retention: r.Retention, Upgrade: r.Upgrade, Notify: r.Notify, Pooler: r.Pooler, Ordering: r.Ordering, Traces: r.Traces}}
	for _, a := range r.Audits {
		if !a.OK {
			s.AuditOK = false
		}
		s.Lost += a.Lost
		s.ProcessedTwice += a.ProcessedTwice
		s.RejectedRows += a.RejectedRows
		if ceilingAudit(a) {
			continue
		}
		s.Deliveries += a.Deliveries
		s.DistinctEvents += a.DistinctEvents
		s.Created += a.Created
		s.Processed += a.Processed
	}
	if p := r.sqlPair(16, "unique"); p != nil {
		s.IngestSQLPerS, s.RawInsertPerS = p.Ingest.PerS, p.Raw.PerS
	} else if r.SQL != nil && len(r.SQL.Pairs) > 0 {
		s.IngestSQLPerS, s.RawInsertPerS = r.SQL.Pairs[0].Ingest.PerS, r.SQL.Pairs[0].Raw.PerS
	}
	if r.SQL != nil {
		s.IngestSQLRatio = math.Inf(1)
		for _, p := range r.SQL.Pairs {
			s.IngestSQLRatio = math.Min(s.IngestSQLRatio, p.Ratio)
		}
		if math.IsInf(s.IngestSQLRatio, 1) {
			s.IngestSQLRatio = 0
		}
	}
	if r.HTTP != nil {
		s.IngestHTTPPerS = r.HTTP.AcceptedPerS
		s.HTTPp99MS = r.HTTP.ResponseMS.P99
		if s.RawInsertPerS > 0 {
			s.HTTPRatio = round3(s.IngestHTTPPerS / s.RawInsertPerS)
			r.HTTP.RatioToCeiling = s.HTTPRatio
		}
	}
	if g := r.GroupCommit; g != nil {
		s.HTTPBatchedPerS, s.HTTPAlonePerS, s.Raw64PerS = g.Batched.PerS, g.Alone.PerS, g.Raw.PerS
		s.HTTPBatchedRatio, s.HTTPBatchedP99MS = g.BatchedVsRaw, g.Batched.CallMS.P99
	}
	if r.Process != nil {
		s.ProcessPerS = r.Process.Default.PerS
		s.WALPerEvent = r.Process.Default.WALPer
	}
	if rl, rv := r.Variants.Find(variantRowLock), r.Variants.RiverPoint(); rv != nil {
		jobs := rv.PerS
		s.RiverJobsPerS = &jobs
		if rl != nil && jobs > 0 {
			ratio := round3(rl.PerS / jobs)
			s.ProcessVsRiver = &ratio
		}
	}
	if r.Latency != nil {
		if l := r.Latency.find("single", 200); l != nil {
			s.LatencyMS = latencyKeys{P50: l.FromResponse.P50, P99: l.FromResponse.P99}
		}
		if l := r.Latency.find("single", 1000); l != nil {
			s.LatencyP99At1k = l.FromResponse.P99
		}
		if l := r.Latency.find("cross", 200); l != nil {
			s.LatencyP99Cross = l.FromResponse.P99
		}
		if l := r.Latency.find("cross", 1000); l != nil {
			s.LatencyP99Cross1k = l.FromResponse.P99
		}
		if l := r.Latency.find("poll", 200); l != nil {
			s.LatencyP99Poll = l.FromResponse.P99
		}
		if l := r.Latency.find("poll", 1000); l != nil {
			s.LatencyP99Poll1k = l.FromResponse.P99
		}
	}
	s.storageKeys = r.storageKeys()
	s.Targets = r.targets(s)
	return s
}

// atLeast and below build targets with their margins.
func atLeast(name, goal string, v, th float64, unit string, measured bool) target {
	t := target{Name: name, Goal: goal, Value: v, Threshold: th, Unit: unit, Measured: measured}
	if !measured {
		t.Margin = "not measured"
		return t
	}
	t.Met = v >= th
	if t.Met {
		t.Margin = fmt.Sprintf("met, %.0f%% above", (v/th-1)*100)
	} else {
		t.Margin = fmt.Sprintf("MISSED by %.0f%%", (1-v/th)*100)
	}
	return t
}

func below(name, goal string, v, th float64, unit string, measured bool) target {
	t := target{Name: name, Goal: goal, Value: v, Threshold: th, Unit: unit, Measured: measured}
	if !measured {
		t.Margin = "not measured"
		return t
	}
	t.Met = v < th
	if t.Met {
		t.Margin = fmt.Sprintf("met, %.0f%% under", (1-v/th)*100)
	} else {
		t.Margin = fmt.Sprintf("MISSED: %.1f× the limit", v/th)
	}
	return t
}

func (r *results) targets(s summary) []target {
	var ts []target
	ts = append(ts, atLeast("sql_ingest_vs_ceiling", "SQL ingest ≥ 0.9× the plain INSERT … ON CONFLICT DO NOTHING, every pair incl. the duplicate storm (worst pair)",
		s.IngestSQLRatio, 0.9, "×", r.SQL != nil && len(r.SQL.Pairs) > 0))
	ts = append(ts, atLeast("http_vs_ceiling", "HTTP ingest ≥ 0.5× the SQL ceiling of the same run (plain insert, 16 connections, unique ids)",
		s.HTTPRatio, 0.5, "×", r.HTTP != nil && s.RawInsertPerS > 0))
	ts = append(ts, below("http_p99", "HTTP ingest p99 response < 20 ms", s.HTTPp99MS, 20, "ms", r.HTTP != nil))
	ts = append(ts, atLeast("http_group_commit_vs_raw_64", "HTTP ingest with group commit, 64 senders, unique ids ≥ 1.0× the plain single-row insert with 64 connections",
		s.HTTPBatchedRatio, 1.0, "×", r.GroupCommit != nil && s.Raw64PerS > 0))
	ts = append(ts, below("http_group_commit_p99", "HTTP ingest with group commit, 64 senders: p99 ≤ 20 ms", s.HTTPBatchedP99MS, 20.001, "ms", r.GroupCommit != nil))
	procOK := true
	for _, a := range r.Audits {
		if strings.HasPrefix(a.Scenario, "process") && !a.OK {
			procOK = false
		}
	}
	pt := atLeast("processing", "Processing ≥ 15,000 events/s with the sql: handler (default 8 workers × batch 100), exactly once",
		s.ProcessPerS, 15000, "events/s", r.Process != nil)
	if pt.Measured && !procOK {
		pt.Met, pt.Margin = false, "audit failed"
	}
	ts = append(ts, pt)
	var vsRiver float64
	if s.ProcessVsRiver != nil {
		vsRiver = *s.ProcessVsRiver
	}
	vt := atLeast("processing_vs_river", "Processing (sql: handler, default configuration, exactly once) ≥ 1.5× River's work benchmark, same cluster, same run, same number of events",
		vsRiver, 1.5, "×", s.ProcessVsRiver != nil)
	if vt.Measured && !procOK {
		vt.Met, vt.Margin = false, "audit failed"
	}
	ts = append(ts, vt)
	ts = append(ts, below("wakeup_200", "Wake-up p99 < 10 ms at 200 deliveries/s, one runner", s.LatencyMS.P99, 10, "ms", r.Latency != nil && r.Latency.find("single", 200) != nil))
	ts = append(ts, below("wakeup_1000", "Wake-up p99 < 25 ms at 1,000 deliveries/s, one runner", s.LatencyP99At1k, 25, "ms", r.Latency != nil && r.Latency.find("single", 1000) != nil))
	ts = append(ts, below("wakeup_cross", "Wake-up p99 < 150 ms across runners (cross-process NOTIFY) at 200 deliveries/s", s.LatencyP99Cross, 150, "ms", r.Latency != nil && r.Latency.find("cross", 200) != nil))
	ts = append(ts, below("wakeup_cross_1000", "Wake-up p99 < 150 ms across runners at 1,000 deliveries/s", s.LatencyP99Cross1k, 150, "ms", r.Latency != nil && r.Latency.find("cross", 1000) != nil))
	ts = append(ts, r.orderingTargets()...)
	return append(ts, r.storageTargets()...)
}

func human(n int64) string {
	switch {
	case n >= 1_000_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + " M"
	case n >= 1000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e3), ".0") + " k"
	}
	return fmt.Sprint(n)
}

// num formats a rate with thousands separators.
func num(v float64) string {
	n := int64(math.Round(v))
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func printTable(w io.Writer, r *results, s summary) {
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	fmt.Fprintf(w, "\npginbox bench (%s) — %d CPUs, %.1f GiB, %s; %s\n", mode, r.Machine.NProc, r.Machine.MemGiB, r.Machine.CPUModel, firstWords(r.Postgres.Version, 2))
	fmt.Fprintf(w, "load average before %s, after %s; %.0f s\n\n", r.Machine.LoadBefore, r.Machine.LoadAfter, s.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tvalue\tdetail")
	fmt.Fprintln(tw, "-------\t-----\t------")
	if r.SQL != nil {
		for _, p := range r.SQL.Pairs {
			fmt.Fprintf(tw, "SQL ingest %s, %d conns\t%s/s\tplain insert %s/s, ratio %.2f; xids/delivery %.2f vs %.2f\n", p.Mode, p.Conns,
				num(p.Ingest.PerS), num(p.Raw.PerS), p.Ratio, p.Ingest.XIDsPer, p.Raw.XIDsPer)
			if d := p.Digest; d != nil {
				fmt.Fprintf(tw, "SQL ingest with body digest %s, %d conns\t%s/s\t%.2f× of without (unsigned keys: github, shopify, header-keyed sume); call p50 %.2f ms vs %.2f ms\n",
					p.Mode, p.Conns, num(d.PerS), p.DigestRatio, d.CallMS.P50, p.Ingest.CallMS.P50)
			}
		}
	}
	if r.Notify != nil {
		for _, v := range r.Notify.Variants {
			fmt.Fprintf(tw, "NOTIFY %s, %d conns\t%s/s\t%.2f× of none, %d notifications received\n", v.Name, v.Conns, num(v.PerS), r.Notify.RatioToNone[v.Name], v.Notifies)
		}
	}
	if h := r.HTTP; h != nil {
		fmt.Fprintf(tw, "HTTP ingest, %d conns\t%s/s\tp50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms; %.2f× ceiling; runner %.2f cores, RSS %.0f MiB (peak %.0f); postgres %.2f cores; load generator %.2f cores\n",
			h.Conns, num(h.AcceptedPerS), h.ResponseMS.P50, h.ResponseMS.P99, h.ResponseMS.P999, h.RatioToCeiling, h.CPU.Runner, h.RunnerRSSMiB, h.RunnerPeakMiB, h.CPU.Postgres, h.CPU.Bench)
		fmt.Fprintf(tw, "HTTP forged deliveries\t%d\tall answered 401: %v\n", h.Rejected, h.Rejected > 0)
		fmt.Fprintf(tw, "HTTP drain (serve, sql: handler)\t%s/s\t%d late redeliveries during it: p99 %.2f ms, max %.2f ms\n", num(h.Drain.PerS), h.Drain.Late, h.Drain.LateMS.P99, h.Drain.LateMS.Max)
	}
	if g := r.GroupCommit; g != nil {
		for _, v := range []variantResult{g.Batched, g.Alone, g.Raw} {
			fmt.Fprintf(tw, "%s, %d senders, unique ids\t%s/s\tp50 %.2f ms, p99 %.2f ms; %.2f× the plain insert\n", v.Name, v.Conns, num(v.PerS), v.CallMS.P50, v.CallMS.P99, v.PerS/math.Max(g.Raw.PerS, 1))
		}
		fmt.Fprintf(tw, "group commit: deliveries per transaction\t%.1f\t(pginbox_ingest_batch_size, mean)\n", g.MeanBatch)
	}
	if q := r.SQL; q != nil {
		for _, c := range q.CallCosts {
			fmt.Fprintf(tw, "server CPU per call: %s\t%.0f µs\t%s\n", trunc(c.Statement, 48), c.CPUus, c.What)
		}
	}
	if p := r.Process; p != nil {
		for _, pt := range p.Points {
			fmt.Fprintf(tw, "process %d workers, batch %d\t%s/s\tpostgres %.2f cores (%.0f µs/event), runner %.2f cores (%.0f µs/event)\n", pt.Workers, pt.Batch, num(pt.PerS), pt.CPU.Postgres, pt.PGCPUus, pt.CPU.Bench, pt.RunnerCPUus)
		}
		if p.StatsInFlight.Events > 0 && p.UsualStats.Events > 0 {
			fmt.Fprintf(tw, "process 8×100 A/B: usual stats | stats with events in flight\t%s/s | %s/s\tthe plans must not depend on them (%.0f | %.0f µs server CPU/event)\n",
				num(p.UsualStats.PerS), num(p.StatsInFlight.PerS), p.UsualStats.PGCPUus, p.StatsInFlight.PGCPUus)
		}
		if p.PerEvent.Events > 0 {
			fmt.Fprintf(tw, "process 8×100 event by event from Go\t%s/s\tthe runner before process_batch() (%.0f µs server CPU/event)\n", num(p.PerEvent.PerS), p.PerEvent.PGCPUus)
		}
		for _, c := range p.CallCosts {
			fmt.Fprintf(tw, "server CPU per call: %s\t%.0f µs\t%s\n", trunc(c.Statement, 48), c.CPUus, c.What)
		}
	}
	if l := r.Latency; l != nil {
		for _, run := range l.Runs {
			fmt.Fprintf(tw, "wake-up %s @ %d/s\tp99 %.2f ms\tp50 %.2f ms, max %.2f ms (from received_at: p50 %.2f, p99 %.2f)\n", run.Config, run.Rate,
				run.FromResponse.P99, run.FromResponse.P50, run.FromResponse.Max, run.FromReceived.P50, run.FromReceived.P99)
		}
	}
	for _, row := range storageRows(r) {
		fmt.Fprintln(tw, row)
	}
	for _, row := range orderingRows(r.Ordering) {
		fmt.Fprintln(tw, row)
	}
	if b := r.Backfill; b != nil {
		fmt.Fprintf(tw, "backfill drill: Stripe event list, %s events, %s never delivered\t%.1f s\tall %s recovered and stored once: %v; %d pages, %d requests, %.1f requests/s\n",
			human(int64(b.Events)), human(int64(b.Missing)), b.RecoverySeconds, human(int64(b.Recovered)), b.AllStored, b.Pages, b.Requests, b.RequestsPerS)
		fmt.Fprintf(tw, "backfill steady-state pass, nothing missing\t%.3f s\t%d requests, %d events listed (the overlap only)\n",
			b.SteadySeconds, b.SteadyRequests, b.SteadyListed)
	}
	tw.Flush()

	fmt.Fprintln(w, "\ntargets:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range s.Targets {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Goal, fmtValue(t), t.Margin)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nexactly-once audit (from the database):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  scenario\tdeliveries\tdistinct\tcreated\tlost\tforged→rows\tprocessed\ttwice\tnot run\tok")
	for _, a := range r.Audits {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d→%d\t%d\t%d\t%d\t%v\n", a.Scenario, a.Deliveries, a.DistinctEvents, a.Created, a.Lost,
			a.Rejected, a.RejectedRows, a.Processed, a.ProcessedTwice, a.NotRun, okWord(a))
	}
	tw.Flush()
	fmt.Fprintf(w, "\ntotals: deliveries %d, distinct_events %d, created %d, processed %d, processed_twice %d, lost %d — audit %s\n",
		s.Deliveries, s.DistinctEvents, s.Created, s.Processed, s.ProcessedTwice, s.Lost, map[bool]string{true: "OK", false: "FAILED"}[s.AuditOK])
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func okWord(a audit) string {
	if a.OK {
		return "ok"
	}
	return "FAIL: " + strings.Join(a.Problems, "; ")
}

func fmtValue(t target) string {
	if !t.Measured {
		return "—"
	}
	switch t.Unit {
	case "×":
		return fmt.Sprintf("%.2f×", t.Value)
	case "ms":
		return fmt.Sprintf("%.2f ms", t.Value)
	default:
		return num(t.Value) + " " + t.Unit
	}
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

// orderingTargets: ordered processing ≥ 0.8× unordered for each shape
// (worst lease), and ingest on a provider without ordering no slower than
// before ordering existed (≥ 0.95×, the noise of interleaved slices).
func (r *results) orderingTargets() []target {
	o := r.Ordering
	var ts []target
	for _, shape := range [][2]int{{200, 25}, {10_000, 5}} {
		worst, measured, ok := 0.0, false, true
		label := fmt.Sprintf("%s keys × %d", num(float64(shape[0])), shape[1])
		if o != nil {
			for _, p := range o.Points {
				// The quick run has fewer keys in both shapes.
				if p.PerKey == shape[1] {
					if p.Ratio > 0 && (!measured || p.Ratio < worst) {
						worst = p.Ratio
					}
					measured = measured || p.Ratio > 0
					ok = ok && p.Audit
					label = fmt.Sprintf("%s keys × %d", num(float64(p.Keys)), p.PerKey)
				}
			}
		}
		t := atLeast(fmt.Sprintf("ordering_%dx%d", shape[0], shape[1]),
			"Ordered processing per key ≥ 0.8× unordered, same events ("+label+", random arrival), same handler, worst lease mode, in order and exactly once",
			worst, 0.8, "×", measured)
		if t.Measured && !ok {
			t.Met, t.Margin = false, "audit failed"
		}
		ts = append(ts, t)
	}
	var v float64
	measured := o != nil && o.Ingest != nil && o.Ingest.Before != nil
	if measured {
		v = o.Ingest.UnorderedVsBefore
	}
	ts = append(ts, atLeast("ordering_ingest", "SQL ingest on a provider without ordering ≥ 0.95× the schema before ordering existed (16 connections, unique ids, interleaved slices)",
		v, 0.95, "×", measured))
	return ts
}
