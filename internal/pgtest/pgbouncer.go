package pgtest

import (
	"context"
	"testing"

	"github.com/peterldowns/pgtestdb"

	"github.com/pginbox/pginbox/internal/pgbouncer"
)

// PgBouncer is a PgBouncer process in transaction mode (see
// internal/pgbouncer).
type PgBouncer = pgbouncer.Process

// PgBouncerOptions configures [StartPgBouncer].
type PgBouncerOptions = pgbouncer.Options

// StartPgBouncer starts PgBouncer in front of host:port, letting in the
// harness's users (the superuser and pgtestdb's role).
func StartPgBouncer(ctx context.Context, host, port string, opts PgBouncerOptions) (*PgBouncer, error) {
	opts.Users = append(opts.Users, pgtestdb.DefaultRoleUsername)
	return pgbouncer.Start(ctx, host, port, opts)
}

// PgBouncerFor starts PgBouncer in front of the harness's server, removed
// when t ends. A missing binary fails the test (make test installs it).
func PgBouncerFor(t testing.TB, opts PgBouncerOptions) *PgBouncer {
	t.Helper()
	s := Server(t)
	b, err := StartPgBouncer(context.Background(), s.Host, s.Port, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pgbouncer log:\n%s", b.Log())
		}
		_ = b.Remove()
	})
	return b
}
