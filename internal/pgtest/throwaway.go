package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"

	"github.com/pginbox/pginbox/internal/localpg"
)

// Throwaway is a Postgres server started for one test run.
type Throwaway struct {
	// Host is the server's host name or address.
	Host string
	// Port is the server's TCP port.
	Port int
	// User is a superuser to connect as.
	User string
	// Password is User's password.
	Password string
	// Via names where the server runs: the local binaries or Docker.
	Via string
	// Stop stops the server and removes its data.
	Stop func(ctx context.Context) error
}

// URL returns a connection URL for database db.
func (s *Throwaway) URL(db string) string {
	auth := s.User
	if s.Password != "" {
		auth += ":" + s.Password
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", auth, s.Host, s.Port, db)
}

// StartThrowaway starts a throwaway server: a local cluster from the
// installed binaries, or, only when there are none and a Docker engine
// answers, a postgres container via dockertest.
func StartThrowaway(ctx context.Context) (*Throwaway, error) {
	c, err := StartCluster(ctx)
	if err == nil {
		return &Throwaway{
			Host: "127.0.0.1", Port: c.Port, User: localpg.Superuser, Via: c.BinDir,
			Stop: func(ctx context.Context) error {
				err := c.StopMode(ctx, "immediate")
				return errors.Join(err, c.Remove())
			},
		}, nil
	}
	if !errors.Is(err, localpg.ErrNoBinaries) {
		return nil, err
	}
	d, derr := startDocker()
	if derr != nil {
		return nil, fmt.Errorf("%w; and Docker fallback: %v", err, derr)
	}
	return d, nil
}

// startDocker runs the official postgres image with test settings.
func startDocker() (*Throwaway, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("dockertest: %w", err)
	}
	if err := pool.Client.Ping(); err != nil {
		return nil, fmt.Errorf("no Docker engine answers: %w", err)
	}
	const password = "pginbox"
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: "postgres",
		Tag:        "16",
		Env:        []string{"POSTGRES_PASSWORD=" + password},
		Cmd:        []string{"postgres", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=400"},
	}, func(hc *docker.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = docker.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return nil, fmt.Errorf("dockertest: run postgres: %w", err)
	}
	_ = res.Expire(3600) // never outlive a crashed test run by more than an hour
	port, _ := strconv.Atoi(res.GetPort("5432/tcp"))
	s := &Throwaway{Host: "127.0.0.1", Port: port, User: "postgres", Password: password, Via: "docker postgres:16",
		Stop: func(context.Context) error { return pool.Purge(res) }}
	pool.MaxWait = 2 * time.Minute
	if err := pool.Retry(func() error {
		db, err := sql.Open("pgx", s.URL("postgres"))
		if err != nil {
			return err
		}
		defer db.Close()
		return db.Ping()
	}); err != nil {
		_ = pool.Purge(res)
		return nil, fmt.Errorf("dockertest: postgres never became ready: %w", err)
	}
	return s, nil
}
