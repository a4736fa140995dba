package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/retention"
	"github.com/pginbox/pginbox/internal/views"
)

// ErrBreach is returned by `pginbox checks` when any check is out of range.
var ErrBreach = errors.New("checks breached")

// checksCmd refreshes the views, runs every check once and prints the
// results; it fails (exit 1) on any breach, for cron and CI.
func checksCmd(ctx context.Context, app App, args []string) error {
	fs := newFlags("checks", "checks [--json]", "refresh the views, run every anomaly check once; exit 1 on a breach")
	asJSON := fs.Bool("json", false, "print JSON")
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
	// One view per short transaction, as the runner's schedule does.
	if err := views.Refresh(ctx, pool); err != nil {
		return err
	}
	rows, err := pool.Query(ctx, `SELECT name, family, value::float8, min_ok::float8, max_ok::float8, ok FROM webhooks.run_checks()`)
	if err != nil {
		return fmt.Errorf("run checks: %w", err)
	}
	defer rows.Close()
	type result struct {
		Name   string   `json:"name"`
		Family string   `json:"family"`
		Value  *float64 `json:"value"`
		MinOK  *float64 `json:"min_ok"`
		MaxOK  *float64 `json:"max_ok"`
		OK     bool     `json:"ok"`
	}
	var results []result
	var breached []string
	for rows.Next() {
		var r result
		if err := rows.Scan(&r.Name, &r.Family, &r.Value, &r.MinOK, &r.MaxOK, &r.OK); err != nil {
			return fmt.Errorf("run checks: %w", err)
		}
		results = append(results, r)
		if !r.OK {
			breached = append(breached, r.Name)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("run checks: %w", err)
	}
	if *asJSON {
		_ = writeJSON(app.Stdout, results, true)
	} else {
		tw := tabwriter.NewWriter(app.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "STATUS\tFAMILY\tCHECK\tVALUE\tRANGE")
		for _, r := range results {
			status := "ok"
			if !r.OK {
				status = "BREACH"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", status, printable(r.Family), printable(r.Name), fmtOpt(r.Value), fmtRange(r.MinOK, r.MaxOK))
		}
		tw.Flush()
		fmt.Fprintf(app.Stdout, "%d checks, %d breached\n", len(results), len(breached))
	}
	if len(breached) > 0 {
		return fmt.Errorf("%w: %s", ErrBreach, strings.Join(breached, ", "))
	}
	return nil
}

// fmtOpt formats a check's value or bound for a person: "-" for none,
// never an exponent (5.42101e-19 is float noise around 0, printed "0").
func fmtOpt(f *float64) string {
	if f == nil {
		return "-"
	}
	return fmtValue(*f)
}

// fmtValue prints v with four significant digits (every digit of a whole
// number), without an exponent; below 1e-9 it is 0.
func fmtValue(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case math.Abs(v) < 1e-9:
		return "0"
	}
	decimals := min(max(3-int(math.Floor(math.Log10(math.Abs(v)))), 0), 9)
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func fmtRange(lo, hi *float64) string {
	return "[" + fmtOpt(lo) + ", " + fmtOpt(hi) + "]"
}

// replayCmd: pginbox replay <event_id> --reason "...".
func replayCmd(ctx context.Context, app App, args []string) error {
	fs := newFlags("replay", "replay <event_id> --reason R", "put an event back to pending on purpose (audited in webhooks.replays)")
	reason := fs.String("reason", "", "why the event runs again (required; audited)")
	// Accept the id before or after the flags.
	var idArg string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		idArg, args = args[0], args[1:]
	}
	withDataDir := dataDirFlag(fs)
	if err := fs.parse(app, args); err != nil {
		return err
	}
	app = withDataDir(app)
	if idArg == "" && fs.NArg() == 1 {
		idArg = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return fs.usageError("replay takes one event id")
	}
	if idArg == "" {
		return fs.usageError("replay needs an event id")
	}
	id, err := strconv.ParseInt(idArg, 10, 64)
	if err != nil || id < 1 {
		return fs.usageError("%q is not an event id", idArg)
	}
	if strings.TrimSpace(*reason) == "" {
		return fs.usageError("replay needs --reason")
	}
	_, pool, closePool, err := connect(ctx, app)
	if err != nil {
		return err
	}
	defer closePool()
	if _, err := pool.Exec(ctx, `SELECT webhooks.replay($1::bigint, $2::text)`, id, *reason); err != nil {
		return fmt.Errorf("replay %d: %w", id, err)
	}
	fmt.Fprintf(app.Stdout, "event %d is pending again (audited in webhooks.replays)\n", id)
	return nil
}

// pruneCmd: one retention run with PGINBOX_KEEP_PAYLOAD / PGINBOX_KEEP_KEYS.
func pruneCmd(ctx context.Context, app App, args []string) error {
	rows := settings("PGINBOX_KEEP_PAYLOAD", "PGINBOX_KEEP_KEYS", "PGINBOX_DATA_DIR")
	fs := newFlags("prune", "prune [--keep-payload D] [--keep-keys D]", fmt.Sprintf(
		"drop old payloads (%s, default %s) and whole old events (%s, default %s)", rows[0].Env, rows[0].Default, rows[1].Env, rows[1].Default))
	getenv, err := withFlags(app, fs, args, rows)
	if err != nil {
		return err
	}
	env, err := envconfig.Read(getenv, envconfig.Table)
	if err != nil {
		return err
	}
	payload, keys := env.Duration("PGINBOX_KEEP_PAYLOAD"), env.Duration("PGINBOX_KEEP_KEYS")
	pool, closePool, err := openPool(ctx, app, "DATABASE_URL", env.DatabaseURL(), env.DataDir(), false)
	if err != nil {
		return err
	}
	defer closePool()
	rep, err := retention.Prune(ctx, pool, payload, keys)
	if err != nil {
		return err
	}
	fmt.Fprintf(app.Stdout, "pruned %d payloads and deleted %d events in %d transactions\n", rep.PayloadsPruned, rep.EventsDeleted, rep.Calls)
	return nil
}
