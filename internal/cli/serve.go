package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/pginbox/pginbox/internal/database"
	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/runner"
)

// settings returns the rows of the settings table for variables vars.
func settings(vars ...string) []envconfig.Setting {
	rows := make([]envconfig.Setting, 0, len(vars))
	for _, v := range vars {
		s, ok := envconfig.Lookup(v)
		if !ok {
			panic("cli: no setting " + v)
		}
		rows = append(rows, s)
	}
	return rows
}

// withFlags parses a command's flags, one per row of rows that has a Flag
// (--keep-payload for PGINBOX_KEEP_PAYLOAD), and returns a getenv in which
// the flags given override the environment.
func withFlags(app App, fs *flagSet, args []string, rows []envconfig.Setting) (Env, error) {
	vals := map[string]*string{}
	for _, s := range rows {
		if s.Flag == "" {
			continue
		}
		usage := s.Doc + " ($" + s.Env
		if s.Default != "" {
			usage += ", default " + s.Default
		}
		vals[s.Env] = fs.String(s.Flag, "", usage+")")
	}
	if err := fs.parse(app, args); err != nil {
		return nil, err
	}
	if err := fs.noArgs(); err != nil {
		return nil, err
	}
	set := map[string]string{}
	for v, p := range vals {
		if *p != "" {
			set[v] = *p
		}
	}
	return func(k string) string {
		if v, ok := set[k]; ok {
			return v
		}
		return app.Getenv(k)
	}, nil
}

// serve is `pginbox serve`: the webhook endpoint, workers and schedules
// until interrupted. It reads the command's own variables (DATABASE_URL,
// PGINBOX_DATA_DIR, PGINBOX_LOG_LEVEL) here, the runner's in
// runner.ConfigFromEnv, and the providers' again for its start warnings.
func serve(ctx context.Context, app App, args []string) error {
	fs := newFlags("serve", "serve [flags]",
		"run the webhook endpoint, workers and schedules; each flag overrides the PGINBOX_* variable it names")
	getenv, err := withFlags(app, fs, args, envconfig.Table)
	if err != nil {
		return err
	}
	env, err := envconfig.Read(getenv, envconfig.Command())
	if err != nil {
		return err
	}
	stderr := &lockedWriter{w: app.Stderr}
	log := NewLogger(stderr, env.LogLevel())
	cfg, err := runner.ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	// The providers' settings once more, for the warnings (ConfigFromEnv
	// accepted them: this read cannot fail).
	if penv, err := envconfig.Read(getenv, envconfig.Runner()); err == nil {
		for _, w := range startWarnings(penv) {
			log.Warn(w)
		}
	}
	db, err := database.Open(ctx, env.DatabaseURL(), env.DataDir(), log.With("component", "embedded-postgres"))
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if db.Cluster != nil {
		cfg.SkipMigrate = false // the embedded cluster is ours to migrate
		fmt.Fprintf(app.Stdout, "embedded PostgreSQL: psql %q\n", db.URL)
	}
	srv, err := runner.New(ctx, cfg, db.URL, log)
	if err != nil {
		return err
	}
	if app.StderrTerminal {
		printed := make(chan struct{})
		go func() {
			defer close(printed)
			if addr := srv.Addr(); addr != nil { // nil: Run could not listen
				fmt.Fprint(stderr, listeningText(addr, srv.AdminAddr()))
			}
		}()
		defer func() { <-printed }()
	}
	return srv.Run(ctx)
}

// listeningText is where serve listens, for a person at a terminal.
func listeningText(addr, admin net.Addr) string {
	text := fmt.Sprintf("pginbox is listening:\n  webhooks  http://%s/webhooks/{provider}   (PGINBOX_ADDR)\n", addr)
	if admin != nil {
		text += fmt.Sprintf("  console   http://%s/   (PGINBOX_ADMIN_ADDR; /metrics, /api/status)\n", admin)
	} else {
		text += "  console   off (PGINBOX_ADMIN_ADDR=off)\n"
	}
	return text
}

// lockedWriter serialises the writes of the logger and of serve's own
// lines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p whole, one caller at a time.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
