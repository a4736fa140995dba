package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pginbox/pginbox/internal/status"
)

// orderingCmd is `pginbox ordering [--provider P] [--json] [--limit N]`:
// each ordered provider's settings, how many of its sequences are blocked
// and how many events wait behind them, its events processed out of order,
// then the longest-blocked sequences with their head event (the id to read
// on the console, or to replay once the handler is fixed).
func orderingCmd(ctx context.Context, app App, args []string) error {
	fs := newFlags("ordering", "ordering [--provider P] [--json] [--limit N]",
		"show the providers with strict order per key (set_ordering), their blocked sequences\n"+
			"(a head that fails, or is dead while dead_blocks) and the events processed out of order")
	provider := fs.String("provider", "", "only this provider")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	limit := fs.Int("limit", 50, "list at most this many blocked sequences, longest blocked first")
	withDataDir := dataDirFlag(fs)
	if err := fs.parse(app, args); err != nil {
		return err
	}
	app = withDataDir(app)
	if err := fs.noArgs(); err != nil {
		return err
	}
	if *limit < 1 {
		return fmt.Errorf("%w: --limit must be positive", ErrUsage)
	}
	_, pool, closePool, err := connect(ctx, app)
	if err != nil {
		return err
	}
	defer closePool()
	st, err := status.ReadOrdering(ctx, pool, *provider, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(app.Stdout, st, true)
	}
	printOrdering(app, st, time.Now())
	return nil
}

// printOrdering writes the two tables of `pginbox ordering`.
func printOrdering(app App, st status.Ordering, now time.Time) {
	if len(st.Providers) == 0 {
		fmt.Fprintln(app.Stdout, "no provider is ordered (webhooks.set_ordering)")
		return
	}
	tw := tabwriter.NewWriter(app.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tKEY PATH\tORDER PATH\tDEAD BLOCKS\tBLOCKED\tWAITING\tOLDEST BLOCKED\tOUT OF ORDER")
	var blocked int64
	for _, p := range st.Providers {
		keyPath, orderPath, dead := printable(p.KeyPath), "received_at", "no"
		if !p.Ordered {
			keyPath, orderPath = "(not ordered)", "-"
		}
		if p.OrderPath != nil {
			orderPath = printable(*p.OrderPath)
		}
		if p.DeadBlocks {
			dead = "yes"
		}
		oldest := "-"
		if p.OldestBlockedSince != nil {
			oldest = now.Sub(*p.OldestBlockedSince).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\n", printable(p.Provider), keyPath, orderPath, dead, p.Blocked, p.Waiting, oldest, p.OutOfOrder)
		blocked += p.Blocked
	}
	tw.Flush()
	if len(st.Blocked) == 0 {
		fmt.Fprintln(app.Stdout, "\nno blocked sequence")
		return
	}
	fmt.Fprintf(app.Stdout, "\n%d blocked sequences, longest blocked first (%d shown):\n", blocked, len(st.Blocked))
	tw = tabwriter.NewWriter(app.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tKEY\tHEAD EVENT\tSTATUS\tATTEMPTS\tBLOCKED FOR\tWAITING\tLAST ERROR")
	for _, s := range st.Blocked {
		head := printable(s.HeadStatus)
		if s.HeadStatus == "pending" && s.NextAttemptAt != nil {
			head = "retrying in " + max(0, s.NextAttemptAt.Sub(now)).Round(time.Second).String()
		}
		key := "(hidden)" // a grant_reader role reads no value from a payload
		if s.Key != nil {
			key = oneLine(*s.Key, 40)
		}
		lastErr := "-"
		if s.LastError != nil {
			lastErr = oneLine(*s.LastError, 80)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d/%d\t%s\t%d\t%s\n", printable(s.Provider), key, s.HeadID, head, s.Attempts, s.MaxAttempts,
			now.Sub(s.BlockedSince).Round(time.Second), s.Waiting, lastErr)
	}
	tw.Flush()
	fmt.Fprintln(app.Stdout, "\nonce the handler is fixed, a dead head goes again with: pginbox replay <head event> --reason \"...\"")
}

// oneLine shortens s to n runes on one line, for a table cell, and makes it
// printable: runs of white space become one space, control characters
// escapes (escaped first, so n counts what is shown).
func oneLine(s string, n int) string {
	s = printable(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
