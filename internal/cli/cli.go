// Package cli implements the pginbox command line: one function per
// subcommand, each returning an error that Run prints as one line. A usage
// error exits 2, any other failure 1; `pginbox <command> --help` prints the
// command's flags and exits 0.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/database"
	"github.com/pginbox/pginbox/internal/envconfig"
)

// Version is set at build time with -ldflags "-X github.com/pginbox/pginbox/internal/cli.Version=...".
var Version = ""

// Env is how a command reads its environment (os.Getenv in production).
type Env func(string) string

// App carries what every subcommand needs.
type App struct {
	// Stdout and Stderr receive a command's output and its errors.
	Stdout, Stderr io.Writer
	// Stdin is what `pginbox import -` reads; nil means os.Stdin.
	Stdin io.Reader
	// Getenv reads the environment; nil means os.Getenv.
	Getenv Env
	// Log is the commands' logger; nil means JSON warnings and errors on Stderr.
	Log *slog.Logger
	// StderrTerminal says Stderr is a terminal: serve then also prints
	// where it listens as a line for a person, beside its JSON log.
	StderrTerminal bool
}

// ErrUsage marks a command line that could not be understood.
var ErrUsage = errors.New("usage")

// errHelp is returned once a command printed its --help: Run exits 0.
var errHelp = errors.New("help shown")

const usage = `usage: pginbox <command> [flags]

commands:
  migrate            apply the SQL migrations to DATABASE_URL (or the embedded cluster)
  serve              run the webhook endpoint, workers and schedules (flags mirror PGINBOX_*: --addr, --handler ...)
  reconcile [--all]  run one reconciliation pass and print its counts as JSON
  gaps [--provider P] [--json] [--limit N] [--backfill]
                     list expected events that did not arrive; --backfill asks the
                     providers' APIs (PGINBOX_API_URL_<NAME>, PGINBOX_API_KEY_<NAME>)
  checks [--json]    refresh the views, run every anomaly check once; exit 1 on a breach
  ordering [--provider P] [--json] [--limit N]
                     ordered providers (set_ordering), their blocked sequences and the
                     event each waits on, events processed out of order
  replay ID --reason R  put event ID back to pending on purpose (audited)
  prune              drop old payloads (PGINBOX_KEEP_PAYLOAD, 30d) and keys (PGINBOX_KEEP_KEYS, 400d)
  import FILE.jsonl --provider NAME [--batch N]
                     import history from another inbox, one JSON object a line (- for stdin),
                     as processed events with their own received_at; stored keys are duplicates
  version            print the binary and schema versions
  sql-dist DIR       write the flattened migrations to DIR for the stock goose CLI

environment: DATABASE_URL (unset: the embedded cluster under PGINBOX_DATA_DIR or --data-dir, default
.pginbox, which only serve and migrate create; the other commands start it when it is there);
PGINBOX_DIRECT_URL, a direct connection for migrate and LISTEN when DATABASE_URL is a pooler
pginbox <command> --help prints the command's flags.
`

// Run executes one command line (without the program name) and returns the
// process exit code. Errors are printed as one line on Stderr. Every line
// built from stored values goes through printable (JSON through
// printableJSON): nothing read from the database reaches the terminal as a
// control character.
func Run(ctx context.Context, app App, args []string) int {
	if app.Getenv == nil {
		app.Getenv = os.Getenv
	}
	if app.Log == nil {
		app.Log = NewLogger(app.Stderr, slog.LevelWarn)
	}
	err := dispatch(ctx, app, args)
	if err == nil || errors.Is(err, errHelp) {
		return 0
	}
	// One line, whatever a stored value or a server put in the error.
	msg := printable(strings.NewReplacer("\r\n", " ", "\n", " ", "\t", " ").Replace(err.Error()))
	fmt.Fprintf(app.Stderr, "pginbox: %s\n", msg)
	if errors.Is(err, ErrUsage) {
		// A mistake inside a command: that command's usage line; else
		// (no command, an unknown one) the list of commands.
		var cu *commandUsage
		if errors.As(err, &cu) {
			fmt.Fprintf(app.Stderr, "usage: pginbox %s\n(pginbox %s --help lists its flags)\n", cu.synopsis, cu.name)
		} else {
			fmt.Fprint(app.Stderr, usage)
		}
		return 2
	}
	return 1
}

func dispatch(ctx context.Context, app App, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", ErrUsage)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "migrate":
		return migrate(ctx, app, rest)
	case "serve":
		return serve(ctx, app, rest)
	case "reconcile":
		return reconcileCmd(ctx, app, rest)
	case "gaps":
		return gapsCmd(ctx, app, rest)
	case "checks":
		return checksCmd(ctx, app, rest)
	case "ordering":
		return orderingCmd(ctx, app, rest)
	case "replay":
		return replayCmd(ctx, app, rest)
	case "prune":
		return pruneCmd(ctx, app, rest)
	case "import":
		return importCmd(ctx, app, rest)
	case "version", "--version", "-v":
		return version(ctx, app, rest)
	case "sql-dist":
		return sqlDist(app, rest)
	case "help", "-h", "--help":
		fmt.Fprint(app.Stdout, usage)
		return nil
	default:
		return fmt.Errorf("%w: unknown command %q", ErrUsage, cmd)
	}
}

// flagSet is a command's flags with the text its --help prints.
type flagSet struct {
	*flag.FlagSet
	synopsis, summary string
}

// newFlags returns the flags of a command; synopsis is its usage line and
// summary what it does, both printed by --help.
func newFlags(name, synopsis, summary string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors come back to Run, printed as one line
	return &flagSet{FlagSet: fs, synopsis: synopsis, summary: summary}
}

// parse parses args. -h or --help prints the command's usage and flags on
// app.Stdout and returns errHelp; a bad flag is an ErrUsage.
func (fs *flagSet) parse(app App, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.printHelp(app.Stdout)
		return errHelp
	}
	if err != nil {
		return fs.usageError("%v", err)
	}
	return nil
}

// noArgs is an ErrUsage when arguments are left after the flags.
func (fs *flagSet) noArgs() error {
	if fs.NArg() > 0 {
		return fs.usageError("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// commandUsage is a usage error of one command: Run prints it with that
// command's usage line, not the whole list of commands.
type commandUsage struct {
	err            error
	name, synopsis string
}

func (e *commandUsage) Error() string { return e.err.Error() }
func (e *commandUsage) Unwrap() error { return e.err }

// usageError is an ErrUsage of fs's command: "usage: " and the message.
func (fs *flagSet) usageError(format string, args ...any) error {
	return &commandUsage{err: fmt.Errorf("%w: "+format, append([]any{ErrUsage}, args...)...), name: fs.Name(), synopsis: fs.synopsis}
}

// printHelp writes "usage: pginbox <synopsis>", the summary and the flags.
func (fs *flagSet) printHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: pginbox %s\n\n%s\n", fs.synopsis, fs.summary)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// dataDirFlag adds --data-dir (PGINBOX_DATA_DIR) to the flags of a command
// that reads the database; once fs is parsed, the returned function gives
// app with the flag, when given, in the variable's place.
func dataDirFlag(fs *flagSet) func(App) App {
	s, _ := envconfig.Lookup("PGINBOX_DATA_DIR")
	dir := fs.String(s.Flag, "", fmt.Sprintf("%s, when DATABASE_URL is unset ($%s, default %s)", s.Doc, s.Env, s.Default))
	return func(app App) App {
		if *dir == "" {
			return app
		}
		getenv := app.Getenv
		app.Getenv = func(k string) string {
			if k == s.Env {
				return *dir
			}
			return getenv(k)
		}
		return app
	}
}

// connect reads the environment and opens a pool on the database it names
// (or the embedded cluster): the preamble of every command that queries.
func connect(ctx context.Context, app App) (envconfig.Values, *pgxpool.Pool, func(), error) {
	env, err := envconfig.Read(app.Getenv, envconfig.Table)
	if err != nil {
		return env, nil, nil, err
	}
	pool, closePool, err := openPool(ctx, app, "DATABASE_URL", env.DatabaseURL(), env.DataDir(), false)
	return env, pool, closePool, err
}

// openPool resolves databaseURL (held by variable: DATABASE_URL or
// PGINBOX_DIRECT_URL), or else the embedded cluster under dataDir
// (PGINBOX_DATA_DIR), opens a pool on it and connects once, so a server
// that cannot be reached is one line naming variable. close releases both.
// Only with create does a folder without a cluster get one (migrate): every
// other command says there is none ([database.NoClusterError]), so one run
// in the wrong folder leaves nothing behind.
func openPool(ctx context.Context, app App, variable, databaseURL, dataDir string, create bool) (pool *pgxpool.Pool, close func(), err error) {
	resolve := database.OpenExisting
	if create {
		resolve = database.Open
	}
	d, err := resolve(ctx, databaseURL, dataDir, app.Log)
	if err != nil {
		return nil, nil, err
	}
	pc, err := database.PoolConfig(d.URL, "pginbox-cli")
	if err != nil {
		_ = d.Close(ctx)
		return nil, nil, err
	}
	pool, err = pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		_ = d.Close(ctx)
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		_ = d.Close(ctx)
		if u := database.Unreachable(variable, err); u != err {
			return nil, nil, u
		}
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	return pool, func() { pool.Close(); _ = d.Close(context.Background()) }, nil
}
