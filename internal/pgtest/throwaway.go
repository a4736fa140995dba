package pgtest

import (
	"context"
	"errors"
	"fmt"

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
// answers, a postgres container (see ./dockerpg).
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
