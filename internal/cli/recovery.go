package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pginbox/pginbox/internal/backfill"
	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/status"
)

// reconcileCmd is `pginbox reconcile [--all]`: one webhooks.reconcile() pass,
// printed as the JSON it returns ({"skipped": true} while another pass runs).
func reconcileCmd(ctx context.Context, app App, args []string) error {
	fs := newFlags("reconcile", "reconcile [--all]", "run one reconciliation pass and print its counts as JSON")
	all := fs.Bool("all", false, "re-read every event for contradictions, not only those since the last pass")
	withDataDir := dataDirFlag(fs)
	if err := fs.parse(app, args); err != nil {
		return err
	}
	app = withDataDir(app)
	if err := fs.noArgs(); err != nil {
		return err
	}
	_, pool, closePool, err := connect(ctx, app)
	if err != nil {
		return err
	}
	defer closePool()
	var out string
	if err := pool.QueryRow(ctx, `SELECT webhooks.reconcile(trigger => 'cli', recheck_all => $1)::text`, *all).Scan(&out); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	fmt.Fprintln(app.Stdout, string(printableJSON([]byte(out))))
	return nil
}

// gapsCmd is `pginbox gaps [--provider p] [--json] [--limit n] [--backfill]`:
// lists the gaps (webhooks.find_gaps) as a table for people or JSON for
// scripts; with --backfill it runs one backfill pass instead and prints its
// report, with the status APIs of PGINBOX_PROVIDERS (name=kind list) and
// PGINBOX_API_URL_<NAME> / PGINBOX_API_KEY_<NAME>.
func gapsCmd(ctx context.Context, app App, args []string) error {
	fs := newFlags("gaps", "gaps [--provider P] [--json] [--limit N] [--backfill]",
		"list expected events that did not arrive; --backfill asks the providers' APIs\n"+
			"(PGINBOX_API_URL_<NAME>, PGINBOX_API_KEY_<NAME>) and repairs what they answer")
	provider := fs.String("provider", "", "only this provider's gaps")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	limit := fs.Int("limit", 1000, "list or backfill at most this many gaps, oldest deadline first")
	doBackfill := fs.Bool("backfill", false, "ask the providers' APIs about the gaps and repair them")
	withDataDir := dataDirFlag(fs)
	if err := fs.parse(app, args); err != nil {
		return err
	}
	app = withDataDir(app)
	if err := fs.noArgs(); err != nil {
		return err
	}
	if *limit < 1 {
		return fs.usageError("--limit must be positive")
	}
	env, err := envconfig.Read(app.Getenv, envconfig.Table)
	if err != nil {
		return err
	}
	for _, w := range env.APIWarnings() {
		app.Log.Warn(w)
	}
	apis, err := backfill.APIs(env.Kinds(), env.Endpoint)
	if err != nil {
		return err
	}
	var logs map[string]backfill.EventLog
	if *doBackfill {
		if logs, err = backfill.EventLogs(env.Kinds(), env.Endpoint, env.AppID); err != nil {
			return err
		}
	}
	pool, closePool, err := openPool(ctx, app, "DATABASE_URL", env.DatabaseURL(), env.DataDir(), false)
	if err != nil {
		return err
	}
	defer closePool()

	if *doBackfill {
		opts := backfill.Options{Provider: *provider, MaxGaps: *limit, Logger: app.Log,
			Lookback: env.Duration("PGINBOX_BACKFILL_LOOKBACK")}
		if env.IsSet("PGINBOX_BACKFILL_TIMEOUT") { // else the one-shot pass's own default, 5m
			opts.PassTimeout = env.Duration("PGINBOX_BACKFILL_TIMEOUT")
		}
		report, err := backfill.Run(ctx, pool, apis, opts)
		var logReports []backfill.LogReport
		for _, name := range slices.Sorted(maps.Keys(logs)) {
			if *provider != "" && name != *provider {
				continue
			}
			rep, lerr := backfill.RunLog(ctx, pool, logs[name], opts)
			logReports = append(logReports, rep)
			err = errors.Join(err, lerr)
		}
		if *asJSON {
			out := struct {
				backfill.Report
				EventLogs []backfill.LogReport `json:"event_logs"`
			}{report, logReports}
			if out.EventLogs == nil {
				out.EventLogs = []backfill.LogReport{}
			}
			if encErr := writeJSON(app.Stdout, out, false); encErr != nil && err == nil {
				err = encErr
			}
		} else {
			fmt.Fprintf(app.Stdout, "gaps %d: ingested %d, duplicates %d, tombstoned %d, postponed %d, "+
				"skipped %d, failed %d, malformed %d, unauthorized %d, refused %d (%d requests)\n",
				report.Gaps, report.Ingested, report.Duplicates, report.Tombstoned, report.Postponed,
				report.Skipped, report.Failed, report.Malformed, report.Unauthorized, report.Refused, report.Requests)
			for _, p := range slices.Sorted(maps.Keys(report.RefusedBy)) {
				for _, reason := range slices.Sorted(maps.Keys(report.RefusedBy[p])) {
					fmt.Fprintf(app.Stdout, "refused %s: %d %s\n", printable(p), report.RefusedBy[p][reason], printable(reason))
				}
			}
			for _, r := range logReports {
				state := "complete, checkpoint " + r.To.UTC().Format(time.RFC3339)
				if !r.Complete {
					state = "cut short, checkpoint kept: " + printable(r.Error)
				}
				fmt.Fprintf(app.Stdout, "event log %s from %s: listed %d, recovered %d, duplicates %d, %d pages (%d requests); %s\n",
					printable(r.Provider), r.From.UTC().Format(time.RFC3339), r.Listed, r.Recovered, r.Duplicates, r.Pages, r.Requests, state)
			}
		}
		return passOutcome(app, err)
	}

	gaps, err := status.FindGaps(ctx, pool, *provider, *limit)
	if err != nil {
		return err
	}
	for i, g := range gaps {
		gaps[i].Backfill = backfill.Verdict(apis, backfill.Gap(g))
	}
	if *asJSON {
		if gaps == nil {
			gaps = []status.Gap{}
		}
		return writeJSON(app.Stdout, gaps, false)
	}
	if len(gaps) == 0 {
		fmt.Fprintln(app.Stdout, "no gaps")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tEXTERNAL_ID\tDEADLINE\tOVERDUE\tBACKFILL\tSTATUS_URL")
	for _, g := range gaps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", printable(g.Provider), printable(g.ExternalID),
			g.Deadline.UTC().Format(time.RFC3339), now.Sub(g.Deadline).Round(time.Second), printable(g.Backfill), printable(g.StatusURL))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	more := ""
	if len(gaps) == *limit {
		more = fmt.Sprintf(" (the first %d: raise --limit for more)", *limit)
	}
	fmt.Fprintf(app.Stdout, "%d gaps%s\n", len(gaps), more)
	return nil
}

// passOutcome decides the exit of gaps --backfill: a pass that ran exits 0
// whatever it could not fill (a refused key, a pass cut short, an API that
// kept failing), each such problem reported as one line on Stderr; only an
// error that kept the pass from running fails the command.
func passOutcome(app App, err error) error {
	if err == nil || errors.Is(err, backfill.ErrNoPass) {
		return err
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(app.Stderr, "pginbox: %s\n", printable(line))
	}
	return nil
}
