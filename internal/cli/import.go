package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// importMaxBatch is import_events' limit of elements per call.
	importMaxBatch = 10000
	// importMaxBytes ends a call's array early once its lines reach this
	// size, so a file of large payloads never makes one huge statement.
	importMaxBytes = 32 << 20
)

// importIndex finds the index import_events names in a refused element's
// error: "pginbox: events[N] (0-based): why; nothing was imported".
var importIndex = regexp.MustCompile(`^pginbox: events\[(\d+)\] \(0-based\): (.*?)(?:; nothing was imported)?$`)

// importCmd: pginbox import FILE.jsonl --provider NAME. Each line of FILE
// (- for stdin) is one JSON object {"external_id", "event_type",
// "received_at", "payload"}; blank lines are skipped. The lines go to
// webhooks.import_events in calls of --batch lines (each its own
// transaction), with a progress line on stderr after each call and the
// totals on stdout. The first bad line stops the import: the error names its
// line and how many lines before it were imported (the calls before the one
// that refused it, and before a line that is not JSON, every line before
// it). Running the same file again is safe: what was imported counts as
// duplicates.
func importCmd(ctx context.Context, app App, args []string) error {
	fs := newFlags("import", "import FILE.jsonl --provider NAME [--batch N]",
		"import history from another inbox: each line of FILE (- for stdin) is one JSON object\n"+
			`{"external_id", "event_type", "received_at" (RFC 3339 with an offset), "payload" (optional)},`+"\n"+
			"stored as a processed event of NAME with its own received_at; keys already stored count as duplicates")
	provider := fs.String("provider", "", "the provider name the events are stored under (required)")
	batch := fs.Int("batch", 5000, fmt.Sprintf("lines per import_events call and transaction (1 to %d)", importMaxBatch))
	var file string
	if len(args) > 0 && (args[0] == "-" || !strings.HasPrefix(args[0], "-")) {
		file, args = args[0], args[1:]
	}
	withDataDir := dataDirFlag(fs)
	if err := fs.parse(app, args); err != nil {
		return err
	}
	app = withDataDir(app)
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return fs.usageError("import takes one file")
	}
	if file == "" {
		return fs.usageError("import needs a file (- for stdin)")
	}
	if strings.TrimSpace(*provider) == "" {
		return fs.usageError("import needs --provider")
	}
	if *batch < 1 || *batch > importMaxBatch {
		return fs.usageError("--batch must be between 1 and %d, got %d", importMaxBatch, *batch)
	}
	in := app.Stdin
	name := "stdin"
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		in, name = f, file
	} else if in == nil {
		in = os.Stdin
	}
	_, pool, closePool, err := connect(ctx, app)
	if err != nil {
		return err
	}
	defer closePool()
	imp := &importer{app: app, pool: pool, provider: *provider, name: name, batch: *batch}
	if err := imp.run(ctx, in); err != nil {
		return err
	}
	fmt.Fprintf(app.Stdout, "imported %d, duplicates %d, lines %d\n", imp.imported, imp.duplicates, imp.lines)
	return nil
}

// importer streams one file through webhooks.import_events.
type importer struct {
	app      App
	pool     *pgxpool.Pool
	provider string
	name     string
	batch    int

	lines                int   // lines read so far
	done                 int   // lines up to which every line was imported
	imported, duplicates int64 // totals of the calls that committed

	pending [][]byte // the next call's elements
	at      []int    // the line of each
	size    int      // their bytes
}

// run reads in line by line, sending a call whenever batch lines or
// importMaxBytes are pending, and the rest at the end.
func (imp *importer) run(ctx context.Context, in io.Reader) error {
	r := bufio.NewReaderSize(in, 1<<20)
	for {
		line, readErr := r.ReadBytes('\n')
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			if err := imp.flush(ctx); err != nil {
				return err
			}
			imp.done = imp.lines
			return imp.fail(fmt.Sprintf("line %d", imp.lines+1), fmt.Errorf("read: %w", readErr))
		}
		if len(line) > 0 {
			imp.lines++
			if err := imp.add(ctx, bytes.TrimSpace(line)); err != nil {
				return err
			}
		}
		if readErr != nil {
			break
		}
	}
	return imp.flush(ctx)
}

// add queues one line (blank ones are skipped), sending the pending lines
// first when it is not JSON, so that every line before a bad one is in.
func (imp *importer) add(ctx context.Context, line []byte) error {
	if len(line) == 0 {
		return nil
	}
	if !json.Valid(line) {
		if err := imp.flush(ctx); err != nil {
			return err
		}
		imp.done = imp.lines - 1
		return imp.fail(fmt.Sprintf("line %d", imp.lines), errors.New("not a JSON value"))
	}
	imp.pending = append(imp.pending, line)
	imp.at = append(imp.at, imp.lines)
	imp.size += len(line) + 1
	if len(imp.pending) >= imp.batch || imp.size >= importMaxBytes {
		return imp.flush(ctx)
	}
	return nil
}

// flush sends the pending lines as one import_events call and prints the
// progress line.
func (imp *importer) flush(ctx context.Context) error {
	if len(imp.pending) == 0 {
		return nil
	}
	var arr bytes.Buffer
	arr.Grow(imp.size + 2)
	arr.WriteByte('[')
	arr.Write(bytes.Join(imp.pending, []byte{','}))
	arr.WriteByte(']')
	var res struct {
		Imported   int64 `json:"imported"`
		Duplicates int64 `json:"duplicates"`
	}
	err := imp.pool.QueryRow(ctx, `SELECT webhooks.import_events($1, $2::text::jsonb)`, imp.provider, arr.String()).Scan(&res)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "22023" {
			if m := importIndex.FindStringSubmatch(pgErr.Message); m != nil {
				if i, convErr := strconv.Atoi(m[1]); convErr == nil && i < len(imp.at) {
					return imp.fail(fmt.Sprintf("line %d", imp.at[i]), errors.New(m[2]))
				}
			}
		}
		return imp.fail(fmt.Sprintf("lines %d to %d", imp.at[0], imp.at[len(imp.at)-1]), err)
	}
	imp.imported += res.Imported
	imp.duplicates += res.Duplicates
	imp.done = imp.at[len(imp.at)-1]
	imp.pending, imp.at, imp.size = imp.pending[:0], imp.at[:0], 0
	fmt.Fprintf(imp.app.Stderr, "pginbox import: imported %d, duplicates %d, lines %d\n", imp.imported, imp.duplicates, imp.done)
	return nil
}

// fail is the error that stops the import at where (a line, or the lines
// of a call): what was wrong, and what the calls before it imported.
func (imp *importer) fail(where string, err error) error {
	before := "no line was imported"
	if imp.done > 0 {
		before = fmt.Sprintf("lines 1 to %d were imported (imported %d, duplicates %d)", imp.done, imp.imported, imp.duplicates)
	}
	return fmt.Errorf("import %s: %s: %w; %s, none from line %d on; run it again once fixed: imported lines count as duplicates",
		imp.name, where, err, before, imp.done+1)
}
