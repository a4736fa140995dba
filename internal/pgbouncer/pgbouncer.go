// Package pgbouncer starts and stops a PgBouncer process in transaction
// mode in front of a Postgres server, from Debian's pgbouncer binary
// (tests/ensure-pgbouncer.sh installs it): for the test suite
// (internal/pgtest) and the bench's pooled figures.
package pgbouncer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pginbox/pginbox/internal/localpg"
)

// ErrNoBinary is returned when the pgbouncer binary is not installed
// (tests/ensure-pgbouncer.sh installs Debian's package).
var ErrNoBinary = errors.New("pgbouncer: no pgbouncer binary on PATH or in /usr/sbin (run tests/ensure-pgbouncer.sh)")

// Options configures [Start].
type Options struct {
	// PoolSize is default_pool_size: server connections per database and
	// user. Default 4, far below what pginbox's pools open, so server
	// connections really are shared between clients.
	PoolSize int
	// SessionMode runs pool_mode=session instead of transaction.
	SessionMode bool
	// Users may log in besides the local cluster's superuser.
	Users []string
	// Passwords are the users' passwords, by user. Empty (the test suite's
	// trust cluster): PgBouncer checks no password of its own (auth_type
	// trust) and the server, which trusts local users anyway, decides. Set
	// (the bench's password cluster): PgBouncer itself asks every client
	// for its password with scram-sha-256 and presents the same password
	// to the server, so a wrong password never reaches the server as the
	// user; a user without an entry cannot log in through it.
	Passwords map[string]string
}

// Process is a PgBouncer process in transaction mode (or session mode) in front of one
// Postgres server, with the package's stock settings otherwise (no
// max_prepared_statements; ignore_startup_parameters only
// extra_float_digits), started as the user postgres when the test runs as
// root.
type Process struct {
	// Port is where it listens, on 127.0.0.1.
	Port int

	dir  string
	bin  string
	cred *syscall.Credential
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts PgBouncer on a free port in front of the server at
// host:port (every database, through a wildcard entry), letting in the users
// the harness connects as (its superuser and pgtestdb's role): with no
// [Options.Passwords] it checks no password of its own, with them it asks
// for them (scram-sha-256).
func Start(ctx context.Context, host, port string, opts Options) (*Process, error) {
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr != nil {
			return nil, ErrNoBinary
		}
		bin = "/usr/sbin/pgbouncer"
	}
	if opts.PoolSize <= 0 {
		opts.PoolSize = 4
	}
	dir, err := os.MkdirTemp("", "pginbox-test-pgbouncer-")
	if err != nil {
		return nil, fmt.Errorf("pgbouncer: %w", err)
	}
	free, err := localpg.FreePort()
	if err != nil {
		return nil, err
	}
	mode := "transaction"
	if opts.SessionMode {
		mode = "session"
	}
	b := &Process{Port: free, dir: dir, bin: bin}
	users := append([]string{localpg.Superuser}, opts.Users...)
	authType := "trust"
	if len(opts.Passwords) > 0 {
		authType = "scram-sha-256"
	}
	var auth strings.Builder
	seen := map[string]bool{}
	for _, u := range users {
		if seen[u] {
			continue
		}
		seen[u] = true
		if authType != "trust" && opts.Passwords[u] == "" {
			continue // no password, no entry: that user cannot log in through PgBouncer
		}
		// auth_file quotes with "…", a literal " doubled.
		fmt.Fprintf(&auth, "\"%s\" \"%s\"\n", strings.ReplaceAll(u, `"`, `""`), strings.ReplaceAll(opts.Passwords[u], `"`, `""`))
	}
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = %s
auth_file = %s
pool_mode = %s
default_pool_size = %d
max_client_conn = 1000
ignore_startup_parameters = extra_float_digits
logfile = %s
pidfile = %s
admin_users = postgres
`, host, port, free, authType, filepath.Join(dir, "users.txt"), mode, opts.PoolSize, filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	if err := os.WriteFile(filepath.Join(dir, "users.txt"), []byte(auth.String()), 0o600); err != nil {
		return nil, fmt.Errorf("pgbouncer: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644); err != nil {
		return nil, fmt.Errorf("pgbouncer: %w", err)
	}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pgbouncer: pgbouncer as root needs a user postgres: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		b.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		for _, f := range []string{dir, filepath.Join(dir, "users.txt"), filepath.Join(dir, "pgbouncer.ini")} {
			if err := os.Chown(f, uid, gid); err != nil {
				return nil, fmt.Errorf("pgbouncer: %w", err)
			}
		}
	}
	if err := b.Start(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return b, nil
}

// Start runs the PgBouncer process (again, after [PgBouncer.Stop]) on the
// same port and waits until it accepts connections.
func (b *Process) Start(ctx context.Context) error {
	cmd := exec.Command(b.bin, filepath.Join(b.dir, "pgbouncer.ini"))
	cmd.Dir = b.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: b.cred}
	out, err := os.Create(filepath.Join(b.dir, "stderr.log"))
	if err != nil {
		return fmt.Errorf("pgbouncer: %w", err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgbouncer: start pgbouncer: %w", err)
	}
	b.cmd, b.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(b.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", b.Port), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-b.done:
			log, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
			serr, _ := os.ReadFile(filepath.Join(b.dir, "stderr.log"))
			return fmt.Errorf("pgbouncer: pgbouncer exited at start: %s %s", serr, log)
		case <-ctx.Done():
			_ = b.Stop()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = b.Stop()
			return errors.New("pgbouncer: pgbouncer did not listen within 15s")
		}
	}
}

// Stop ends the process by its PID (SIGINT: immediate shutdown, clients
// cut) and waits for it. Idempotent.
func (b *Process) Stop() error {
	if b.cmd == nil {
		return nil
	}
	_ = b.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	b.cmd = nil
	return nil
}

// Remove stops PgBouncer and deletes its folder.
func (b *Process) Remove() error {
	_ = b.Stop()
	return os.RemoveAll(b.dir)
}

// Log returns PgBouncer's log so far.
func (b *Process) Log() string {
	data, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	return string(data)
}

// Via rewrites a URL of the harness's server (as NewConfig or SuperuserURL
// return) to go through this PgBouncer: the same user, password and
// database, another port.
func (b *Process) Via(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	u.Host = fmt.Sprintf("127.0.0.1:%d", b.Port)
	return u.String()
}
