package main

import "fmt"

// The figures of issue 36's storage promises (growth, retention, upgrade):
// their targets, their summary.json keys and their rows of the table.

// storageKeys are the summary.json keys of the storage scenarios.
type storageKeys struct {
	GrowthRows         int64   `json:"growth_rows,omitempty"`
	GrowthIngestRatio  float64 `json:"growth_ingest_ratio,omitempty"`
	GrowthProcessRatio float64 `json:"growth_process_ratio,omitempty"`
	PruneSeconds       float64 `json:"prune_seconds,omitempty"`
	PruneWALBytes      int64   `json:"prune_wal_bytes,omitempty"`
	PruneIngestMaxMS   float64 `json:"prune_ingest_max_ms,omitempty"`
	PruneIngestP99MS   float64 `json:"prune_ingest_p99_ms,omitempty"`
	PruneIngestErrors  int64   `json:"prune_ingest_errors,omitempty"`
	UpgradeMigrateS    float64 `json:"upgrade_migrate_seconds,omitempty"`
	UpgradeKeysPerS    float64 `json:"upgrade_keys_per_s,omitempty"`
	UpgradeMovePerS    float64 `json:"upgrade_move_rows_per_s,omitempty"`
}

func (r *results) storageKeys() storageKeys {
	var k storageKeys
	if g := r.Growth; g != nil {
		k.GrowthRows, k.GrowthIngestRatio, k.GrowthProcessRatio = g.Rows, g.IngestRatio, g.ProcessRatio
	}
	if rt := r.Retention; rt != nil {
		k.PruneSeconds, k.PruneWALBytes = rt.Seconds, rt.judgedWAL()
		k.PruneIngestMaxMS, k.PruneIngestP99MS, k.PruneIngestErrors = rt.DuringMS.Max, rt.DuringMS.P99, rt.IngestErrors
	}
	if u := r.Upgrade; u != nil {
		k.UpgradeMigrateS, k.UpgradeKeysPerS, k.UpgradeMovePerS = u.MigrateSeconds, u.Keys.PerS, u.Move.PerS
	}
	return k
}

// judgedWAL is the WAL the retention target judges: prune()'s own when
// pg_stat_statements measured it, else everything written meanwhile.
func (rt *retentionResult) judgedWAL() int64 {
	if rt.PruneWALKnown {
		return rt.PruneWALBytes
	}
	return rt.WALBytes
}

// storageTargets are the targets of issue 36 points 1 and 3.
func (r *results) storageTargets() []target {
	var ts []target
	g := r.Growth
	measured := g != nil && len(g.Points) == 2 && g.Points[0].IngestPerS > 0
	rows := "10 M"
	if g != nil {
		rows = human(g.Rows)
	}
	var in, pr float64
	if measured {
		in, pr = g.IngestRatio, g.ProcessRatio
	}
	ts = append(ts, atLeast("growth_ingest", fmt.Sprintf("SQL ingest_webhook() with %s processed events kept (random keys, 90 days) ≥ 0.8× the empty install, side by side in one run", rows), in, 0.8, "×", measured))
	ts = append(ts, atLeast("growth_process", fmt.Sprintf("Processing (sql: handler, default settings) with %s processed events kept ≥ 0.9× the empty install, side by side in one run", rows), pr, 0.9, "×", measured && g.Points[0].ProcessPerS > 0))

	rt := r.Retention
	measured = rt != nil && rt.Calls > 0
	what := "60 of 90 days of 10 M events"
	if rt != nil {
		what = fmt.Sprintf("60 of %d days of %s events", rt.Days, human(rt.Rows))
	}
	var secs, mib, maxMS float64
	var errs int64
	if measured {
		secs, mib, maxMS, errs = rt.Seconds, float64(rt.judgedWAL())/(1<<20), rt.DuringMS.Max, rt.IngestErrors
	}
	ts = append(ts, below("retention_seconds", "prune() of "+what+" ≤ 10 s", secs, 10.001, "s", measured))
	ts = append(ts, below("retention_wal", "prune() of "+what+": ≤ 64 MB of WAL", mib, 64.001, "MiB", measured))
	ts = append(ts, below("retention_ingest_wait", "Concurrent ingest during prune() never waits over 1 s (slowest call)", maxMS, 1000.001, "ms", measured))
	e := target{Name: "retention_ingest_errors", Goal: "Concurrent ingest during prune() never fails", Value: float64(errs), Unit: "errors", Measured: measured}
	switch {
	case !measured:
		e.Margin = "not measured"
	case errs == 0:
		e.Met, e.Margin = true, "met, none"
	default:
		e.Margin = fmt.Sprintf("MISSED: %d failed calls", errs)
	}
	return append(ts, e)
}

// storageRows are the table's rows of the storage scenarios.
func storageRows(r *results) []string {
	var out []string
	if g := r.Growth; g != nil {
		for _, p := range g.Points {
			out = append(out, fmt.Sprintf("growth, %s processed events kept\tingest %s/s\tprocess %s/s; µs PostgreSQL CPU per ingest %.0f, per event %.0f; WAL bytes per ingest %.0f, per event %.0f",
				human(p.Rows), num(p.IngestPerS), num(p.ProcessPerS), p.IngestPGus, p.ProcessPGus, p.IngestWAL, p.ProcessWAL))
		}
		if len(g.Points) == 2 {
			out = append(out, fmt.Sprintf("growth: %s kept over empty\tingest %.2f×\tprocessing %.2f×", human(g.Rows), g.IngestRatio, g.ProcessRatio))
		}
		if g.Gaps.Available {
			out = append(out, fmt.Sprintf("gap detection, %s-id window\t%.1f ms\t%d gaps found, %d expected", human(g.Gaps.Window), g.Gaps.BestMS, g.Gaps.Found, g.Gaps.Expected))
		} else if g.Gaps.Note != "" {
			out = append(out, "gap detection\tskipped\t"+g.Gaps.Note)
		}
	}
	if rt := r.Retention; rt != nil {
		out = append(out, fmt.Sprintf("retention: prune() %d of %d days, %s events\t%.2f s\t%d calls; WAL %.1f MiB (prune's own %.1f MiB); ingest during it max %.1f ms, p99 %.1f ms (before p99 %.1f ms), %d errors; old keys still duplicate %d/%d",
			rt.DaysDropped, rt.Days, human(rt.Rows), rt.Seconds, rt.Calls, float64(rt.WALBytes)/(1<<20), float64(rt.PruneWALBytes)/(1<<20),
			rt.DuringMS.Max, rt.DuringMS.P99, rt.BeforeMS.P99, rt.IngestErrors, rt.SampleDuplicates, rt.SampleKeys))
	}
	if u := r.Upgrade; u != nil {
		out = append(out, fmt.Sprintf("upgrade %05d → %05d, %s events: migrate\t%.2f s\tkeys copied %s/s (%.0f s per million), moved %s/s (%.0f s per million); ok %v",
			u.FromVersion, u.ToVersion, human(u.Rows), u.MigrateSeconds, num(u.Keys.PerS), u.Keys.SecondsPerMillion, num(u.Move.PerS), u.Move.SecondsPerMillion, u.OK))
	}
	return out
}
