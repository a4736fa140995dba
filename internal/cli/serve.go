package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/pginbox/pginbox/internal/database"
	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/runner"
)

// serveFlags mirror the environment: --addr sets PGINBOX_ADDR, and so on.
var serveFlags = []string{
	"PGINBOX_ADDR", "PGINBOX_PROVIDERS", "PGINBOX_HANDLER", "PGINBOX_LEASE_MODE", "PGINBOX_WORKERS", "PGINBOX_BATCH",
	"PGINBOX_LEASE", "PGINBOX_RECONCILE_EVERY", "PGINBOX_CHECKS_EVERY", "PGINBOX_POLL_INTERVAL",
	"PGINBOX_NOTIFY_INTERVAL", "PGINBOX_MAX_BODY", "PGINBOX_LISTEN", "PGINBOX_DIRECT_URL", "PGINBOX_LISTEN_URL", "PGINBOX_LISTEN_PING",
	"PGINBOX_MIGRATE", "PGINBOX_SHUTDOWN_TIMEOUT", "PGINBOX_HANDLER_TIMEOUT", "PGINBOX_INGEST_TIMEOUT", "PGINBOX_HTTP_TIMEOUT",
	"PGINBOX_LOG_LEVEL", "PGINBOX_KEEP_PAYLOAD", "PGINBOX_KEEP_KEYS", "PGINBOX_PRUNE_EVERY", "PGINBOX_DATA_DIR",
}

// flagName is the flag of a variable: PGINBOX_KEEP_PAYLOAD → keep-payload.
func flagName(env string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(env, "PGINBOX_")), "_", "-")
}

// withFlags parses a command's flags, one per variable of vars (--keep-payload
// for PGINBOX_KEEP_PAYLOAD), and returns a getenv in which the flags given
// override the environment.
func withFlags(app App, fs *flagSet, args []string, vars []string) (Env, error) {
	vals := map[string]*string{}
	for _, v := range vars {
		vals[v] = fs.String(flagName(v), "", "overrides $"+v)
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
// until interrupted.
func serve(ctx context.Context, app App, args []string) error {
	fs := newFlags("serve", "serve [flags]",
		"run the webhook endpoint, workers and schedules; each flag overrides the PGINBOX_* variable it names")
	getenv, err := withFlags(app, fs, args, serveFlags)
	if err != nil {
		return err
	}
	env, err := envconfig.Read(getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(app.Stderr, &slog.HandlerOptions{Level: env.LogLevel}))
	cfg, err := runner.ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	db, err := database.Open(ctx, env.DatabaseURL, env.DataDir, log.With("component", "embedded-postgres"))
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
	return srv.Run(ctx)
}
