// Command dockerpg is the test harness's Docker fallback: it runs the
// official postgres image with test settings, writes one JSON line with how
// to connect to it on stdout, and removes the container when its stdin
// closes (the harness stops it, or exits) or it receives SIGTERM.
//
// It is a module of its own so that dockertest and the Docker client stay
// out of the module graph of pginbox and of everyone who imports it.
// internal/pgtest runs it with `go run .` from this folder only when no local
// PostgreSQL binaries are found.
package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"
)

// Server is the line dockerpg writes once the server accepts connections.
type Server struct {
	// Host is the server's host name or address.
	Host string `json:"host"`
	// Port is the server's TCP port.
	Port int `json:"port"`
	// User is a superuser to connect as.
	User string `json:"user"`
	// Password is User's password.
	Password string `json:"password"`
	// Via names the image the server runs from.
	Via string `json:"via"`
}

func main() {
	// Ctrl-C reaches the whole process group: the harness decides when the
	// server goes, by closing stdin once its command has ended.
	signal.Ignore(os.Interrupt)
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "dockerpg: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return fmt.Errorf("dockertest: %w", err)
	}
	if err := pool.Client.Ping(); err != nil {
		return fmt.Errorf("no Docker engine answers: %w", err)
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
		return fmt.Errorf("dockertest: run postgres: %w", err)
	}
	defer func() { _ = pool.Purge(res) }()
	_ = res.Expire(3600) // never outlive a crashed test run by more than an hour
	port, _ := strconv.Atoi(res.GetPort("5432/tcp"))
	s := Server{Host: "127.0.0.1", Port: port, User: "postgres", Password: password, Via: "docker postgres:16"}
	url := fmt.Sprintf("postgres://%s:%s@%s:%d/postgres?sslmode=disable", s.User, s.Password, s.Host, s.Port)
	pool.MaxWait = 2 * time.Minute
	if err := pool.Retry(func() error {
		db, err := sql.Open("pgx", url)
		if err != nil {
			return err
		}
		defer db.Close()
		return db.Ping()
	}); err != nil {
		return fmt.Errorf("dockertest: postgres never became ready: %w", err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(s); err != nil {
		return fmt.Errorf("write the server line: %w", err)
	}
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(closed)
	}()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	select {
	case <-closed:
	case <-term:
	}
	return nil
}
