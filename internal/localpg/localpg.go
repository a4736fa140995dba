// Package localpg starts and stops a local PostgreSQL cluster from the
// binaries installed on the machine (initdb, pg_ctl). It backs the embedded
// database of `pginbox serve` and `make run` when DATABASE_URL is unset, and
// the throwaway cluster of the test suite and the bench.
//
// Postgres refuses to run as root, so when the process is root the binaries
// run as the operating-system user "postgres" and the data directory is
// handed to it.
package localpg

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Superuser is the bootstrap role initdb creates.
const Superuser = "postgres"

// PasswordFile is the file under Options.Dir that holds the superuser's
// generated password (mode 0600): the cluster listens on 127.0.0.1 only,
// with no Unix socket, and asks every connection for it (scram-sha-256), so
// another local user cannot connect as the superuser.
const PasswordFile = "password"

// Options configures [Start].
type Options struct {
	// Dir holds the cluster: Dir/data is the data directory, Dir/postgres.log
	// the server log, Dir/port the port it listens on. Created if missing.
	Dir string
	// Port to listen on (127.0.0.1 only). Zero picks a free port when the
	// cluster is created and reuses it afterwards.
	Port int
	// Settings are extra postgresql.conf parameters, applied on every start.
	Settings map[string]string
	// BinDir holds initdb and pg_ctl. Empty means [FindBinDir].
	BinDir string
	// Logger receives progress lines. Nil discards them.
	Logger *slog.Logger
	// Trust lets every connection in without a password (initdb
	// --auth=trust): for the test suite's throwaway clusters only, which
	// live in a fresh temporary folder and are removed after the run. Without
	// it the superuser has a generated password ([PasswordFile]) and
	// connections must present it (scram-sha-256).
	Trust bool
}

// TestSettings trade durability for speed: for throwaway clusters only.
var TestSettings = map[string]string{
	"fsync":                               "off",
	"synchronous_commit":                  "off",
	"full_page_writes":                    "off",
	"max_connections":                     "400",
	"shared_buffers":                      "256MB",
	"log_min_messages":                    "warning",
	"log_min_error_statement":             "panic",
	"autovacuum_naptime":                  "10s",
	"max_locks_per_transaction":           "256",
	"idle_in_transaction_session_timeout": "0",
}

// Cluster is a running local Postgres server.
type Cluster struct {
	// Dir is the folder holding the cluster (see [Options.Dir]).
	Dir string
	// DataDir is the data directory.
	DataDir string
	// Port is the TCP port on 127.0.0.1.
	Port int
	// BinDir holds the server binaries used.
	BinDir string
	// Started is true when Start launched the server, false when it found it
	// already running (then Stop leaves it running too).
	Started bool

	// password is the superuser's, "" for a Trust cluster.
	password string

	cred *syscall.Credential
	log  *slog.Logger
}

// ErrNoBinaries is returned when no initdb/pg_ctl can be found.
var ErrNoBinaries = errors.New("localpg: no PostgreSQL server binaries (initdb, pg_ctl) found on PATH or under /usr/lib/postgresql/*/bin")

// FindBinDir returns the folder holding initdb and pg_ctl: from PATH first,
// else the newest /usr/lib/postgresql/<major>/bin.
func FindBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d, nil
			}
		}
	}
	return "", ErrNoBinaries
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Exists says whether a cluster was initialised under dir (the folder
// [Options.Dir] names): its data directory holds PG_VERSION. It creates
// nothing. A PG_VERSION it may not read (another user's cluster) counts as
// there, so that starting it reports why it cannot be.
func Exists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION"))
	return !errors.Is(err, os.ErrNotExist)
}

// Start creates the cluster under opts.Dir on first use, or reuses it, and
// starts the server unless it is already running. It waits until the server
// accepts connections.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("localpg: Options.Dir is required")
	}
	binDir := opts.BinDir
	if binDir == "" {
		var err error
		if binDir, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	c := &Cluster{Dir: dir, DataDir: filepath.Join(dir, "data"), BinDir: binDir, log: opts.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if err := c.prepareUser(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("localpg: create %s: %w", dir, err)
	}
	if err := c.chown(dir); err != nil {
		return nil, err
	}
	if err := c.ensurePort(opts.Port); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(filepath.Join(c.DataDir, "PG_VERSION"))
	fresh := errors.Is(statErr, os.ErrNotExist)
	if !opts.Trust {
		created, err := c.ensurePassword()
		if err != nil {
			return nil, err
		}
		if !fresh && created {
			// A cluster made before passwords (initdb --auth=trust): give the
			// superuser the new password before it listens with scram.
			if c.running(ctx) {
				return nil, fmt.Errorf("localpg: %s is running with password-less access; stop it (pg_ctl stop -D %s) so pginbox can set a password", c.DataDir, c.DataDir)
			}
			if err := c.setPassword(ctx); err != nil {
				return nil, err
			}
		}
	}
	if fresh {
		if err := c.initdb(ctx); err != nil {
			return nil, err
		}
	}
	if err := c.writeHBA(); err != nil {
		return nil, err
	}
	if err := c.writeSettings(opts.Settings); err != nil {
		return nil, err
	}
	if c.running(ctx) {
		c.log.Info("local postgres already running", "dir", c.DataDir, "port", c.Port)
		return c, nil
	}
	c.log.Info("starting local postgres", "dir", c.DataDir, "port", c.Port)
	if out, err := c.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", c.DataDir,
		"-l", filepath.Join(dir, "postgres.log"), "-o", "-c listen_addresses=127.0.0.1 -c unix_socket_directories='' -p "+strconv.Itoa(c.Port)); err != nil {
		tail, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
		return nil, fmt.Errorf("localpg: pg_ctl start: %w: %s\n%s", err, out, lastLines(tail, 15))
	}
	c.Started = true
	return c, nil
}

// URL returns a connection URL for database db as the bootstrap superuser,
// with its password unless the cluster trusts every connection.
func (c *Cluster) URL(db string) string {
	user := Superuser
	if c.password != "" {
		user += ":" + c.password
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", user, c.Port, db)
}

// Stop stops the server (fast shutdown: connections are closed, in-flight
// transactions roll back) if this Cluster started it.
func (c *Cluster) Stop(ctx context.Context) error {
	if !c.Started {
		return nil
	}
	return c.StopMode(ctx, "fast")
}

// StopMode stops the server with pg_ctl's mode: smart, fast or immediate,
// whoever started it.
func (c *Cluster) StopMode(ctx context.Context, mode string) error {
	if out, err := c.run(ctx, "pg_ctl", "stop", "-w", "-t", "60", "-m", mode, "-D", c.DataDir); err != nil {
		return fmt.Errorf("localpg: pg_ctl stop: %w: %s", err, out)
	}
	c.Started = false
	return nil
}

// Restart starts a server stopped with [Cluster.StopMode] again.
func (c *Cluster) Restart(ctx context.Context) error {
	if out, err := c.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", c.DataDir,
		"-l", filepath.Join(c.Dir, "postgres.log"), "-o", "-c listen_addresses=127.0.0.1 -c unix_socket_directories='' -p "+strconv.Itoa(c.Port)); err != nil {
		tail, _ := os.ReadFile(filepath.Join(c.Dir, "postgres.log"))
		return fmt.Errorf("localpg: pg_ctl start: %w: %s\n%s", err, out, lastLines(tail, 10))
	}
	c.Started = true
	return nil
}

// Remove deletes the cluster's folder. Stop it first.
func (c *Cluster) Remove() error {
	if err := os.RemoveAll(c.Dir); err != nil {
		return fmt.Errorf("localpg: remove %s: %w", c.Dir, err)
	}
	return nil
}

func (c *Cluster) running(ctx context.Context) bool {
	_, err := c.run(ctx, "pg_ctl", "status", "-D", c.DataDir)
	return err == nil
}

func (c *Cluster) initdb(ctx context.Context) error {
	c.log.Info("creating local postgres cluster", "dir", c.DataDir)
	args := []string{"-D", c.DataDir, "-U", Superuser, "--encoding=UTF8", "--locale=C", "--no-sync"}
	if c.password == "" {
		args = append(args, "--auth=trust")
	} else {
		pw, cleanup, err := c.serverReadable(c.password + "\n")
		if err != nil {
			return err
		}
		defer cleanup()
		args = append(args, "--auth=scram-sha-256", "--pwfile="+pw)
	}
	out, err := c.run(ctx, "initdb", args...)
	if err != nil {
		return fmt.Errorf("localpg: initdb: %w: %s", err, out)
	}
	return nil
}

// ensurePassword reads Dir/password, or generates and writes one (0600);
// created reports a new one.
func (c *Cluster) ensurePassword() (created bool, err error) {
	file := filepath.Join(c.Dir, PasswordFile)
	if data, err := os.ReadFile(file); err == nil {
		if pw := strings.TrimSpace(string(data)); pw != "" {
			c.password = pw
			// Tighten a file whose mode was loosened by hand.
			return false, os.Chmod(file, 0o600)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("localpg: read %s: %w", file, err)
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return false, fmt.Errorf("localpg: generate a password: %w", err)
	}
	c.password = hex.EncodeToString(buf)
	if err := os.WriteFile(file, []byte(c.password+"\n"), 0o600); err != nil {
		return false, fmt.Errorf("localpg: write %s: %w", file, err)
	}
	if err := os.Chmod(file, 0o600); err != nil { // whatever the umask
		return false, fmt.Errorf("localpg: chmod %s: %w", file, err)
	}
	return true, nil
}

// serverReadable writes content to a 0600 file the server's user can read
// (initdb --pwfile, single-user input), removed by cleanup.
func (c *Cluster) serverReadable(content string) (string, func(), error) {
	f, err := os.CreateTemp(c.Dir, ".pw-*")
	if err != nil {
		return "", nil, fmt.Errorf("localpg: %w", err)
	}
	cleanup := func() { os.Remove(f.Name()) }
	_, werr := f.WriteString(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = c.chown(f.Name())
	}
	if werr != nil {
		cleanup()
		return "", nil, fmt.Errorf("localpg: %w", werr)
	}
	return f.Name(), cleanup, nil
}

// setPassword gives the superuser c.password in single-user mode (the
// server is not running), for a cluster created with trust.
func (c *Cluster) setPassword(ctx context.Context) error {
	c.log.Info("setting a password on the local postgres cluster", "dir", c.DataDir)
	in, cleanup, err := c.serverReadable(fmt.Sprintf("ALTER ROLE %s PASSWORD '%s';\n", Superuser, c.password))
	if err != nil {
		return err
	}
	defer cleanup()
	out, err := c.runInput(ctx, in, "postgres", "--single", "-D", c.DataDir, "-c", "password_encryption=scram-sha-256", "postgres")
	if err != nil {
		return fmt.Errorf("localpg: set the superuser's password: %w: %s", err, out)
	}
	return nil
}

// writeHBA rewrites pg_hba.conf: TCP on loopback only (the server has no
// Unix socket), scram-sha-256, or trust for a Trust cluster; replication
// connections (pg_basebackup, a standby's walreceiver) likewise.
func (c *Cluster) writeHBA() error {
	method := "scram-sha-256"
	if c.password == "" {
		method = "trust"
	}
	conf := "# written by pginbox localpg on every start\n" +
		"host all all 127.0.0.1/32 " + method + "\n" +
		"host all all ::1/128 " + method + "\n" +
		"host replication all 127.0.0.1/32 " + method + "\n" +
		"host replication all ::1/128 " + method + "\n"
	file := filepath.Join(c.DataDir, "pg_hba.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("localpg: write %s: %w", file, err)
	}
	return c.chown(file)
}

// writeSettings rewrites pginbox.conf, included from postgresql.conf, so the
// settings apply on every start without touching the rest of the file.
func (c *Cluster) writeSettings(settings map[string]string) error {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# written by pginbox localpg on every start\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = '%s'\n", k, strings.ReplaceAll(settings[k], "'", "''"))
	}
	conf := filepath.Join(c.DataDir, "pginbox.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("localpg: write %s: %w", conf, err)
	}
	if err := c.chown(conf); err != nil {
		return err
	}
	main := filepath.Join(c.DataDir, "postgresql.conf")
	data, err := os.ReadFile(main)
	if err != nil {
		return fmt.Errorf("localpg: read %s: %w", main, err)
	}
	if !bytes.Contains(data, []byte("include_if_exists = 'pginbox.conf'")) {
		data = append(data, []byte("\ninclude_if_exists = 'pginbox.conf'\n")...)
		if err := os.WriteFile(main, data, 0o600); err != nil {
			return fmt.Errorf("localpg: write %s: %w", main, err)
		}
	}
	return nil
}

// ensurePort reads Dir/port, or picks and records one.
func (c *Cluster) ensurePort(want int) error {
	file := filepath.Join(c.Dir, "port")
	if want == 0 {
		if data, err := os.ReadFile(file); err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && p > 0 {
				c.Port = p
				return nil
			}
		}
		p, err := FreePort()
		if err != nil {
			return err
		}
		want = p
	}
	c.Port = want
	if err := os.WriteFile(file, []byte(strconv.Itoa(want)+"\n"), 0o644); err != nil {
		return fmt.Errorf("localpg: write %s: %w", file, err)
	}
	return nil
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("localpg: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// prepareUser decides whom the binaries run as: the current user, or
// "postgres" when running as root.
func (c *Cluster) prepareUser() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("localpg: running as root and there is no user \"postgres\" to run the server as (install postgresql or create the user): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return nil
}

func (c *Cluster) chown(path string) error {
	if c.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
		return fmt.Errorf("localpg: chown %s: %w", path, err)
	}
	return nil
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	return c.runInput(ctx, "", name, args...)
}

// runInput runs a server binary as the server's user, its standard input
// read from the file stdin when set.
func (c *Cluster) runInput(ctx context.Context, stdin, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, name), args...)
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			return "", fmt.Errorf("localpg: %w", err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGTZ=UTC")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		cmd.Env = append(cmd.Env, "HOME="+c.Dir)
	}
	// pg_ctl start leaves the server running with our stdout open if we
	// capture it through a pipe; a file avoids waiting for the server to exit.
	out, err := os.CreateTemp("", "localpg-*.out")
	if err != nil {
		return "", fmt.Errorf("localpg: %w", err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// Keep the server out of our process group, so a Ctrl-C aimed at the
	// runner does not kill Postgres before we stop it cleanly.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	runErr := cmd.Run()
	data, _ := os.ReadFile(out.Name())
	return strings.TrimSpace(string(data)), runErr
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Kill crashes the server: every process of it (postmaster, backends, WAL
// writer, checkpointer) is first stopped with SIGSTOP, so none runs on
// while the others die, then killed with SIGKILL — a power cut of the
// server short of the kernel's page cache. It returns once they are gone;
// [Cluster.Restart] then runs crash recovery.
func (c *Cluster) Kill() error {
	pid, err := c.postmasterPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("localpg: stop %d: %w", pid, err)
	}
	procs := append(children(pid), pid)
	for _, p := range procs {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	for _, p := range procs {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	for _, p := range procs {
		for i := 0; i < 500 && alive(p); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	// A killed postmaster can linger as a zombie where init does not reap
	// promptly; its lock file would then make the next start refuse.
	if err := os.Remove(filepath.Join(c.DataDir, "postmaster.pid")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("localpg: %w", err)
	}
	c.Started = false
	return nil
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(data), ") ")
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// Promote ends recovery on a standby (pg_ctl promote) and waits until it
// takes writes.
func (c *Cluster) Promote(ctx context.Context) error {
	if out, err := c.run(ctx, "pg_ctl", "promote", "-w", "-t", "60", "-D", c.DataDir); err != nil {
		return fmt.Errorf("localpg: pg_ctl promote: %w: %s", err, out)
	}
	return nil
}

// BaseBackup copies this running cluster into a new standby under dir with
// pg_basebackup -R (standby.signal and primary_conninfo written) and starts
// it with settings, on a port of its own. The primary's pg_hba.conf
// (writeHBA) admits replication connections from loopback.
func (c *Cluster) BaseBackup(ctx context.Context, dir string, settings map[string]string) (*Cluster, error) {
	sb := &Cluster{Dir: dir, DataDir: filepath.Join(dir, "data"), BinDir: c.BinDir, cred: c.cred, log: c.log}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("localpg: create %s: %w", dir, err)
	}
	if err := sb.chown(dir); err != nil {
		return nil, err
	}
	if out, err := c.run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", Superuser,
		"-D", sb.DataDir, "-R", "-X", "stream", "--no-sync", "-c", "fast"); err != nil {
		return nil, fmt.Errorf("localpg: pg_basebackup: %w: %s", err, out)
	}
	if err := sb.ensurePort(0); err != nil {
		return nil, err
	}
	if err := sb.writeSettings(settings); err != nil {
		return nil, err
	}
	if err := sb.Restart(ctx); err != nil {
		tail, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
		return nil, fmt.Errorf("%w\n%s", err, lastLines(tail, 15))
	}
	return sb, nil
}

func (c *Cluster) postmasterPID() (int, error) {
	data, err := os.ReadFile(filepath.Join(c.DataDir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("localpg: server not running: %w", err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("localpg: bad postmaster.pid %q", first)
	}
	return pid, nil
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	_, rest, _ := strings.Cut(string(data), ") ")
	return !strings.HasPrefix(rest, "Z")
}
