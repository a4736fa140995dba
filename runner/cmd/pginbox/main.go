// Command pginbox is the pginbox runner and admin CLI. See internal/cli.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/pginbox/pginbox/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal starts a graceful shutdown; restoring the default
		// handling makes a second one end the process at once.
		<-ctx.Done()
		stop()
	}()
	// What a library logs through slog.Default or the log package (a
	// warning while the configuration is read) is a JSON line on stderr
	// too, like the commands' own log.
	slog.SetDefault(cli.NewLogger(os.Stderr, slog.LevelWarn))
	code := cli.Run(ctx, cli.App{Stdout: os.Stdout, Stderr: os.Stderr, StderrTerminal: isTerminal(os.Stderr)}, os.Args[1:])
	stop()
	os.Exit(code)
}

// isTerminal reports whether f is a character device (a terminal, not a
// file or a pipe).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
