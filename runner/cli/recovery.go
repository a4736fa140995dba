package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/runner"
)

// reconcileCmd is `pginbox reconcile [--all]`: one webhooks.reconcile() pass,
// printed as the JSON it returns ({"skipped": true} while another pass runs).
func reconcileCmd(ctx context.Context, app App, args []string) error {
	fs := newFlags("reconcile", app)
	all := fs.Bool("all", false, "re-read every event for contradictions, not only those since the last pass")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	db, closeDB, err := openDB(ctx, app)
	if err != nil {
		return err
	}
	defer closeDB()
	var out string
	if err := db.QueryRowContext(ctx, `SELECT webhooks.reconcile(trigger => 'cli', recheck_all => $1)::text`, *all).Scan(&out); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	fmt.Fprintln(app.Stdout, out)
	return nil
}

// gapsCmd is `pginbox gaps [--provider p] [--json] [--limit n] [--backfill]`:
// lists the gaps (webhooks.find_gaps) as a table for people or JSON for
// scripts; with --backfill it runs one backfill pass instead and prints its
// report, with the status APIs of PGINBOX_PROVIDERS (name=kind list) and
// PGINBOX_API_URL_<NAME> / PGINBOX_API_KEY_<NAME>.
func gapsCmd(ctx context.Context, app App, args []string) error {
	fs := newFlags("gaps", app)
	provider := fs.String("provider", "", "only this provider's gaps")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	limit := fs.Int("limit", 1000, "list or backfill at most this many gaps, oldest deadline first")
	backfill := fs.Bool("backfill", false, "ask the providers' APIs about the gaps and repair them")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if *limit < 1 {
		return fmt.Errorf("%w: --limit must be positive", ErrUsage)
	}
	var apis map[string]runner.StatusAPI
	if *backfill {
		kinds, err := providerKinds(app.Getenv("PGINBOX_PROVIDERS"))
		if err != nil {
			return err
		}
		if apis, err = runner.StatusAPIsFromEnv(app.Getenv, kinds, &http.Client{}); err != nil {
			return err
		}
	}

	d, err := runner.OpenDatabase(ctx, app.Getenv("DATABASE_URL"), dataDir(app), app.Log)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close(context.Background()) }()
	pool, err := pgxpool.New(ctx, d.URL)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer pool.Close()

	if *backfill {
		report, err := runner.Backfill(ctx, pool, apis, runner.BackfillOptions{
			Provider: *provider, MaxGaps: *limit, Logger: app.Log,
		})
		if *asJSON {
			enc := json.NewEncoder(app.Stdout)
			if encErr := enc.Encode(report); encErr != nil && err == nil {
				err = encErr
			}
		} else {
			fmt.Fprintf(app.Stdout, "gaps %d: ingested %d, duplicates %d, tombstoned %d, postponed %d, "+
				"skipped %d, failed %d, malformed %d, unauthorized %d (%d requests)\n",
				report.Gaps, report.Ingested, report.Duplicates, report.Tombstoned, report.Postponed,
				report.Skipped, report.Failed, report.Malformed, report.Unauthorized, report.Requests)
		}
		return err
	}

	gaps, err := runner.FindGaps(ctx, pool, *provider, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		if gaps == nil {
			gaps = []runner.Gap{}
		}
		return json.NewEncoder(app.Stdout).Encode(gaps)
	}
	if len(gaps) == 0 {
		fmt.Fprintln(app.Stdout, "no gaps")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tEXTERNAL_ID\tDEADLINE\tOVERDUE\tSTATUS_URL")
	for _, g := range gaps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.Provider, g.ExternalID,
			g.Deadline.UTC().Format(time.RFC3339), now.Sub(g.Deadline).Round(time.Second), g.StatusURL)
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

// providerKinds reads PGINBOX_PROVIDERS ("sume=sume,gh=github") as
// name → kind. Unlike serve it needs no secrets: backfill only calls APIs.
func providerKinds(list string) (map[string]string, error) {
	kinds := map[string]string{}
	for _, item := range strings.Split(list, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, kind, ok := strings.Cut(item, "=")
		name, kind = strings.TrimSpace(name), strings.TrimSpace(kind)
		if !ok || name == "" || kind == "" {
			return nil, fmt.Errorf("PGINBOX_PROVIDERS: %q is not name=kind", item)
		}
		if _, dup := kinds[name]; dup {
			return nil, fmt.Errorf("PGINBOX_PROVIDERS: provider %q listed twice", name)
		}
		kinds[name] = kind
	}
	return kinds, nil
}
