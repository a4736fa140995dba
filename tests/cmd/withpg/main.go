// Command withpg runs a command with a throwaway PostgreSQL cluster: it
// starts one from the local binaries with test settings, exports
// PGTESTDB_HOST/PORT/USER/PASSWORD to the command, waits for it, then stops
// and removes the cluster.
//
//	go run ./tests/cmd/withpg -- go test ./...
//
// When PGTESTDB_HOST or DATABASE_URL is already set it just runs the command.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/pginbox/pginbox/internal/pgtest"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "withpg: usage: withpg -- command [args...]")
		os.Exit(2)
	}
	os.Exit(run(args))
}

func run(args []string) int {
	env := os.Environ()
	if os.Getenv("PGTESTDB_HOST") == "" && os.Getenv("DATABASE_URL") == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		s, err := pgtest.StartThrowaway(ctx)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "withpg: %v\n", err)
			return 1
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.Stop(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "withpg: %v\n", err)
			}
		}()
		fmt.Fprintf(os.Stderr, "withpg: PostgreSQL (%s) on %s:%d\n", s.Via, s.Host, s.Port)
		env = append(env,
			"PGTESTDB_HOST="+s.Host,
			"PGTESTDB_PORT="+strconv.Itoa(s.Port),
			"PGTESTDB_USER="+s.User,
			"PGTESTDB_PASSWORD="+s.Password,
		)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "withpg: %v\n", err)
		return 1
	}
	// Forward Ctrl-C/TERM to the command, then still clean up.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	signal.Stop(sigs)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "withpg: %v\n", err)
		return 1
	}
	return 0
}
