package localpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startIn starts a cluster in a new temporary folder, stopped and removed
// when the test ends.
func startIn(t *testing.T, dir string, trust bool) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: dir, Trust: trust, Settings: map[string]string{"fsync": "off"}})
	if errors.Is(err, ErrNoBinaries) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func tempDir(t *testing.T) string {
	t.Helper()
	// Not t.TempDir(): the server runs as "postgres" when the tests run as
	// root, and must be able to reach its folder.
	dir, err := os.MkdirTemp("", "localpg-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// trySelect connects to url and runs SELECT 1: the error says whether the
// server lets that URL in (it keeps no connection, unlike the tests' connect).
func trySelect(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// TestEmbeddedClusterNeedsThePassword: a cluster for pginbox serve asks every
// TCP connection for the superuser's generated password (scram-sha-256):
// without it or with a wrong one the connection is refused; the password
// lives in a 0600 file; and a cluster created password-less by an older
// version gets one on its next start.
func TestEmbeddedClusterNeedsThePassword(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	c := startIn(t, dir, false)
	defer c.Stop(context.Background())

	if err := trySelect(c.URL("postgres")); err != nil {
		t.Fatalf("with the password: %v", err)
	}
	noPassword := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
	if err := trySelect(noPassword); err == nil || !strings.Contains(err.Error(), "password") {
		t.Fatalf("without a password: %v, want a refusal", err)
	}
	wrong := fmt.Sprintf("postgres://postgres:wrong@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
	if err := trySelect(wrong); err == nil || !strings.Contains(err.Error(), "password authentication failed") {
		t.Fatalf("with a wrong password: %v, want a refusal", err)
	}
	fi, err := os.Stat(filepath.Join(dir, PasswordFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file: %v, mode %v; want 0600", err, fi.Mode())
	}
	hba, _ := os.ReadFile(filepath.Join(c.DataDir, "pg_hba.conf"))
	if strings.Contains(string(hba), "trust") {
		t.Fatalf("pg_hba.conf still trusts someone:\n%s", hba)
	}
}

// TestTrustClusterUpgraded: a cluster created with trust (as before) gets a
// password when started without Trust; the test harness's throwaway
// clusters keep trust.
func TestTrustClusterUpgraded(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	c := startIn(t, dir, true)
	open := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
	if err := trySelect(open); err != nil {
		t.Fatalf("trust cluster: %v", err)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	c = startIn(t, dir, false)
	defer c.Stop(context.Background())
	if err := trySelect(open); err == nil {
		t.Fatal("the upgraded cluster still lets a connection in without a password")
	}
	if err := trySelect(c.URL("postgres")); err != nil {
		t.Fatalf("upgraded cluster with its password: %v", err)
	}
}
