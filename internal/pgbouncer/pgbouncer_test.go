package pgbouncer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pginbox/pginbox/internal/pgbouncer"
	"github.com/pginbox/pginbox/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestPasswordsMakePgBouncerAskForThem: the bench runs PgBouncer with its
// cluster's superuser password. PgBouncer must then check the password
// itself; with auth_type = trust any local user reached the server as that
// user, PgBouncer presenting the real password on the client's behalf.
func TestPasswordsMakePgBouncerAskForThem(t *testing.T) {
	t.Parallel()
	s := pgtest.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const password = "bench-secret-password"
	b, err := pgbouncer.Start(ctx, s.Host, s.Port, pgbouncer.Options{Users: []string{s.User},
		Passwords: map[string]string{s.User: password}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pgbouncer log:\n%s", b.Log())
		}
		_ = b.Remove()
	})
	url := func(pw string) string {
		return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", s.User, pw, b.Port, s.Database)
	}
	for _, tc := range []struct {
		name, password string
		ok             bool
	}{
		{"right password", password, true},
		{"wrong password", "guess", false},
		{"no password", "", false},
	} {
		conn, err := pgx.Connect(ctx, url(tc.password))
		if tc.ok {
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			var one int
			if err := conn.QueryRow(ctx, "select 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("%s: select 1 = %d, %v", tc.name, one, err)
			}
			_ = conn.Close(ctx)
			continue
		}
		if err == nil {
			_ = conn.Close(ctx)
			t.Fatalf("%s: PgBouncer let the client in", tc.name)
		}
		// PgBouncer 1.18 answers a failed SCRAM exchange with 08P01
		// "SASL authentication failed", later ones and the server with
		// 28P01.
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "28P01" && pgErr.Code != "08P01") ||
			!strings.Contains(pgErr.Message, "authentication failed") {
			t.Fatalf("%s: want an authentication failure, got %v", tc.name, err)
		}
	}
}
