package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/pginbox/pginbox/runner"
)

// serveFlags mirror the environment: --addr sets PGINBOX_ADDR, and so on.
var serveFlags = []string{
	"PGINBOX_ADDR", "PGINBOX_PROVIDERS", "PGINBOX_HANDLER", "PGINBOX_WORKERS", "PGINBOX_BATCH",
	"PGINBOX_LEASE", "PGINBOX_RECONCILE_EVERY", "PGINBOX_CHECKS_EVERY", "PGINBOX_POLL_INTERVAL",
	"PGINBOX_NOTIFY_INTERVAL", "PGINBOX_MAX_BODY", "PGINBOX_LISTEN", "PGINBOX_LISTEN_URL", "PGINBOX_LISTEN_PING",
	"PGINBOX_MIGRATE", "PGINBOX_SHUTDOWN_TIMEOUT", "PGINBOX_HANDLER_TIMEOUT", "PGINBOX_INGEST_TIMEOUT", "PGINBOX_HTTP_TIMEOUT",
	"PGINBOX_LOG_LEVEL", "PGINBOX_KEEP_PAYLOAD", "PGINBOX_KEEP_KEYS", "PGINBOX_PRUNE_EVERY", "PGINBOX_DATA_DIR",
}

func flagName(env string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(env, "PGINBOX_")), "_", "-")
}

// withFlags returns a getenv in which flags given on the command line
// override the environment.
func withFlags(app App, name string, args []string, vars []string) (Env, error) {
	fs := newFlags(name, app)
	vals := map[string]*string{}
	for _, v := range vars {
		vals[v] = fs.String(flagName(v), "", "overrides $"+v)
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
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

func serve(ctx context.Context, app App, args []string) error {
	getenv, err := withFlags(app, "serve", args, serveFlags)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if v := getenv("PGINBOX_LOG_LEVEL"); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("PGINBOX_LOG_LEVEL: %q is not debug, info, warn or error", v)
		}
	}
	log := slog.New(slog.NewJSONHandler(app.Stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := runner.ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	db, err := runner.OpenDatabase(ctx, getenv("DATABASE_URL"), dataDir(App{Getenv: getenv}), log.With("component", "embedded-postgres"))
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if db.Cluster != nil {
		cfg.Migrate = true // the embedded cluster is ours to migrate
		fmt.Fprintf(app.Stdout, "embedded PostgreSQL: psql %q\n", db.URL)
	}
	srv, err := runner.New(ctx, cfg, db.URL, log)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}
