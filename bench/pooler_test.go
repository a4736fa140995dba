package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestPoolerWithoutPasswordInURL: the pooler scenario's PgBouncer works with
// a DATABASE_URL that carries no password, as `make bench` is run against a
// server that trusts the bench, or with the password in a .pgpass file; a
// client without the pooler's password is refused; and when no connection
// through PgBouncer can log in, startPooler says why as a skip, which the
// scenario reports without failing the bench. Before, a URL without a
// password gave PgBouncer an auth_file with no entry for its user: every
// client got "SASL authentication failed" and the bench exited 1.
//
// Its own cluster: trust for bench_trust (and the superuser), scram-sha-256
// for bench_pw. Not parallel: it clears PGPASSWORD, so only the URL and the
// passfile it names can give a password.
func TestPoolerWithoutPasswordInURL(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := pgtest.StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.StopMode(context.Background(), "immediate")
		_ = c.Remove()
	})
	const password = "bench-pw-secret"
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	hba := "host all postgres 127.0.0.1/32 trust\n" +
		"host all bench_trust 127.0.0.1/32 trust\n" +
		"host all all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(c.DataDir, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE ROLE bench_trust LOGIN`,
		`CREATE ROLE bench_pw LOGIN PASSWORD '` + password + `'`,
		`SELECT pg_reload_conf()`,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dir := t.TempDir()
	empty, pgpass := filepath.Join(dir, "empty"), filepath.Join(dir, "pgpass")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pgpass, []byte(fmt.Sprintf("127.0.0.1:%d:*:bench_pw:%s\n", c.Port, password)), 0o600); err != nil {
		t.Fatal(err)
	}
	serverURL := func(userinfo, passfile string) string {
		return fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable&passfile=%s", userinfo, c.Port, url.QueryEscape(passfile))
	}

	for _, tc := range []struct {
		name, url, user string
		skip            string // startPooler skips, saying this
	}{
		{name: "trust, no password anywhere", url: serverURL("bench_trust", empty), user: "bench_trust"},
		{name: "password from the passfile", url: serverURL("bench_pw", pgpass), user: "bench_pw"},
		{name: "password in the URL", url: serverURL("bench_pw:"+password, empty), user: "bench_pw"},
		{name: "no password for a role that needs one", url: serverURL("bench_pw", empty), skip: "password authentication failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, via, err := startPooler(ctx, tc.url, 2)
			if tc.skip != "" {
				var skipped *poolerSkipped
				if !errors.As(err, &skipped) || !strings.Contains(skipped.why, tc.skip) {
					if b != nil {
						_ = b.Remove()
					}
					t.Fatalf("startPooler: %v, want it skipped, saying %q", err, tc.skip)
				}
				t.Logf("skipped: %s", skipped.why)
				return
			}
			if err != nil {
				t.Fatalf("startPooler: %v", err)
			}
			defer b.Remove()
			if strings.Contains(via, fmt.Sprintf(":%d/", c.Port)) {
				t.Fatalf("the URL through the pooler %q still names the server's port", via)
			}
			conn, err := pgx.Connect(ctx, via)
			if err != nil {
				t.Fatalf("connect through PgBouncer: %v\nPgBouncer log:\n%s", err, b.Log())
			}
			var user string
			err = conn.QueryRow(ctx, `SELECT current_user`).Scan(&user)
			_ = conn.Close(ctx)
			if err != nil || user != tc.user {
				t.Fatalf("through PgBouncer: current_user %q (%v), want %q", user, err, tc.user)
			}
			// The pooler on loopback lets in only who has its password.
			u, _ := url.Parse(via)
			u.User = url.UserPassword(tc.user, "guess")
			if conn, err := pgx.Connect(ctx, u.String()); err == nil {
				_ = conn.Close(ctx)
				t.Fatalf("PgBouncer let in %s with a wrong password", tc.user)
			}
		})
	}
}
