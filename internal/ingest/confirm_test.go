package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"

	"github.com/pginbox/pginbox/internal/database"
	"github.com/pginbox/pginbox/internal/metrics"
	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/provider/sig"
)

// syncRepDetail is the DETAIL of the server's sync-rep warnings.
const syncRepDetail = "The transaction has already committed locally, but might not have been replicated to the standby."

// TestSyncRepCancelledNotice: the server's warnings that a commit's wait for
// the synchronous standbys was cut short are recognised by their routine
// (never translated) or, from a server that sends none, by their severity
// and English message; never by their DETAIL, which pginbox's own
// unsigned-key notice fills with a caller-chosen key, nor by a message SQL
// raised.
func TestSyncRepCancelledNotice(t *testing.T) {
	t.Parallel()
	const detail = syncRepDetail
	for _, tc := range []struct {
		name string
		n    pgconn.Notice
		want bool
	}{
		{"cancel request", pgconn.Notice{SeverityUnlocalized: "WARNING", Code: "01000", Routine: "SyncRepWaitForLSN",
			Message: "canceling wait for synchronous replication due to user request", Detail: detail}, true},
		{"terminate", pgconn.Notice{SeverityUnlocalized: "WARNING", Code: "57P01", Routine: "SyncRepWaitForLSN",
			Message: "canceling the wait for synchronous replication and terminating connection due to administrator command", Detail: detail}, true},
		{"translated", pgconn.Notice{SeverityUnlocalized: "WARNING", Code: "01000", Routine: "SyncRepWaitForLSN",
			Message: "annulation de l'attente pour la réplication synchrone", Detail: "La transaction a déjà été validée localement"}, true},
		{"no routine field", pgconn.Notice{Severity: "WARNING", Code: "01000",
			Message: "canceling wait for synchronous replication due to user request", Detail: detail}, true},
		{"unsigned key conflict", pgconn.Notice{SeverityUnlocalized: "NOTICE", Code: "00000", Routine: "exec_stmt_raise",
			Message: unsignedConflictNotice, Detail: "provider github, external_id x, event_id 1: the key is not signed"}, false},
		{"unsigned key conflict quoting the detail", pgconn.Notice{SeverityUnlocalized: "NOTICE", Code: "00000", Routine: "exec_stmt_raise",
			Message: unsignedConflictNotice, Detail: "provider github, external_id " + detail + ", event_id 1: the key is not signed"}, false},
		{"raised by SQL with the message", pgconn.Notice{SeverityUnlocalized: "WARNING", Code: "01000", Routine: "exec_stmt_raise",
			Message: "canceling wait for synchronous replication due to user request", Detail: detail}, false},
		{"no routine field, a notice", pgconn.Notice{Severity: "NOTICE", Code: "00000",
			Message: "canceling wait for synchronous replication due to user request", Detail: detail}, false},
		{"no routine field, the detail only", pgconn.Notice{Severity: "WARNING", Code: "01000",
			Message: "something else", Detail: detail}, false},
		{"other warning", pgconn.Notice{SeverityUnlocalized: "WARNING", Code: "25P01", Routine: "CheckTransactionBlock",
			Message: "there is no transaction in progress"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := syncRepCancelled(&tc.n); got != tc.want {
				t.Fatalf("syncRepCancelled(%q) = %v, want %v", tc.n.Message, got, tc.want)
			}
		})
	}
}

// TestDuplicateReadOnlyWithoutSyncStandby: with no synchronous standby
// (synchronous_standby_names empty, as on the test cluster) a duplicate is
// answered from a read-only transaction, no transaction id and no WAL, one
// delivery alone or a batch: the WAL record that makes a duplicate's commit
// wait for the standbys is written only when there are some
// (TestSyncStandbyLostNoAck covers that side). A batch's one INSERT takes
// an id from webhooks.events_id_seq for each first element before the
// unique key finds it stored, and the first nextval() after a checkpoint
// (and every 32nd) writes the sequence's WAL record under a transaction id;
// so each run first takes one value in a statement of its own, which
// leaves the sequence logged ahead (one make test, with a checkpoint
// between the set-up and the batch, failed here before).
func TestDuplicateReadOnlyWithoutSyncStandby(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, 2)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `SELECT webhooks.ingest_webhook('p', k, 't', '{}') FROM unnest(ARRAY['a', 'b']) AS k`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func(tx pgx.Tx) ([]string, error)
	}{
		{"alone", func(tx pgx.Tx) ([]string, error) {
			var id int64
			var outcome string
			err := tx.QueryRow(ctx, ingestSQL, "p", "a", "t", "{}", nil, nil).Scan(&id, &outcome)
			return []string{outcome}, err
		}},
		{"batch", func(tx pgx.Tx) ([]string, error) {
			rows, err := tx.Query(ctx, batchSQL, []string{"p", "p"}, []string{"a", "b"}, []string{"t", "t"}, []string{"{}", "{}"}, [][]byte{nil, nil}, []*string{nil, nil})
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
				var ord int
				var id int64
				var outcome, refused string
				err := r.Scan(&ord, &id, &outcome, &refused)
				return outcome, err
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := pool.Exec(ctx, `SELECT nextval('webhooks.events_id_seq')`); err != nil {
				t.Fatal(err)
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			outcomes, err := tc.run(tx)
			if err != nil {
				t.Fatal(err)
			}
			var names string
			var xid bool
			if err := tx.QueryRow(ctx, `SELECT current_setting('synchronous_standby_names'), pg_current_xact_id_if_assigned() IS NOT NULL`).Scan(&names, &xid); err != nil {
				t.Fatal(err)
			}
			if names != "" {
				t.Fatalf("synchronous_standby_names = %q on the test cluster", names)
			}
			for _, o := range outcomes {
				if o != "duplicate" {
					t.Fatalf("outcomes %v, want duplicates", outcomes)
				}
			}
			if xid {
				t.Fatal("a duplicate with no synchronous standby got a transaction id: it writes")
			}
		})
	}
}

// TestConfirmedReasons: how confirmed() tells a statement's commit, on a
// pool configured as the runner's ingest pool (database.PoolConfig, notices
// to Notices). A success is confirmed; an error the server answered with
// (the transaction rolled back) is returned as is; the sync-rep warning
// (handed to the notice handler by hand: the test cluster has no standby)
// is sync_rep_cancelled, but neither its text raised by SQL nor pginbox's
// own unsigned-key notice whose key quotes its DETAIL (alone or in a batch:
// confirmed, and the conflict counted); a success returned after the
// context ended is deadline; a connection lost after the statement was
// sent, the statement's backend terminated (57P01) or a pooler's 08P01
// (raised by SQL here) is no_answer. (TestSyncStandbyLostNoAck has the real
// warning and a real lost primary.)
func TestConfirmedReasons(t *testing.T) {
	t.Parallel()
	pc, err := database.PoolConfig(pgtest.NewConfig(t).URL(), "pginbox-ingest")
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(nil)
	pc.ConnConfig.OnNotice = Notices(func() *metrics.Set { return m }, map[string]sig.Provider{"conflicts": nil})
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	exec := func(sql string) func(context.Context, *pgx.Conn) error {
		return func(ctx context.Context, c *pgx.Conn) error { _, err := c.Exec(ctx, sql); return err }
	}
	t.Run("cases", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			run    func(context.Context, *pgx.Conn) error
			reason string // an unconfirmed commit's reason; with sqlErr also "": confirmed
			sqlErr string // an error returned as is: its SQLSTATE
		}{
			{"confirmed", exec(`SELECT 1`), "", ""},
			{"server error", exec(`SELECT 1/0`), "", "22012"},
			{"sync rep warning", func(ctx context.Context, c *pgx.Conn) error {
				// The server's warning as it arrives (SQL cannot raise one from
				// SyncRepWaitForLSN): handed to the pool's own notice handler.
				_, err := c.Exec(ctx, `SELECT 1`)
				pc.ConnConfig.OnNotice(c.PgConn(), &pgconn.Notice{SeverityUnlocalized: "WARNING", Severity: "WARNING", Code: "01000",
					Routine: "SyncRepWaitForLSN", Message: "canceling wait for synchronous replication due to user request",
					Detail: syncRepDetail})
				return err
			}, reasonSyncRepCancelled, ""},
			{"sync rep text raised by SQL", exec(`DO $$ BEGIN RAISE WARNING 'canceling wait for synchronous replication due to user request'
			USING DETAIL = '` + syncRepDetail + `'; END $$`), "", ""},
			{"unsigned-key duplicate quoting the sync rep detail", func(ctx context.Context, c *pgx.Conn) error {
				// A caller-chosen key (an unsigned X-GitHub-Delivery, say) lands
				// in the DETAIL of pginbox's NOTICE for a different body under it.
				key := "x " + syncRepDetail
				for _, body := range []string{`{"a": 1}`, `{"a": 2}`} {
					sum := sha256.Sum256([]byte(body))
					var id int64
					var outcome string
					if err := c.QueryRow(ctx, ingestSQL, "conflicts", key, "t", body, sum[:], nil).Scan(&id, &outcome); err != nil {
						return err
					}
				}
				return nil
			}, "", ""},
			{"batch with an unsigned-key duplicate quoting the sync rep detail", func(ctx context.Context, c *pgx.Conn) error {
				// The same in a batch: its other delivery is not failed with it.
				key := "y " + syncRepDetail
				for _, bodies := range [][]string{{`{"b": 1}`}, {`{"b": 2}`, `{"b": 3}`}} {
					n := len(bodies)
					keys, digests := []string{key, "y other"}[:n], make([][]byte, n)
					for i, b := range bodies {
						sum := sha256.Sum256([]byte(b))
						digests[i] = sum[:]
					}
					rows, err := c.Query(ctx, batchSQL, []string{"conflicts", "conflicts"}[:n], keys, []string{"t", "t"}[:n],
						bodies, digests, make([]*string, n))
					if err != nil {
						return err
					}
					rows.Close()
					if err := rows.Err(); err != nil {
						return err
					}
				}
				return nil
			}, "", ""},
			{"backend terminated", func(ctx context.Context, c *pgx.Conn) error {
				pid := c.PgConn().PID()
				time.AfterFunc(200*time.Millisecond, func() {
					_, _ = pool.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pid)
				})
				_, err := c.Exec(ctx, `SELECT pg_sleep(5)`)
				return err
			}, reasonNoAnswer, ""},
			{"pooler's connection error", exec(`DO $$ BEGIN RAISE EXCEPTION 'server conn crashed?' USING ERRCODE = '08P01'; END $$`),
				reasonNoAnswer, ""},
			{"after the deadline", func(ctx context.Context, c *pgx.Conn) error {
				_, err := c.Exec(ctx, `SELECT 1`)
				<-ctx.Done()
				return err
			}, reasonDeadline, ""},
			{"connection lost", func(ctx context.Context, c *pgx.Conn) error {
				time.AfterFunc(200*time.Millisecond, func() { _ = c.PgConn().Conn().Close() })
				_, err := c.Exec(ctx, `SELECT pg_sleep(5)`)
				return err
			}, reasonNoAnswer, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				err := confirmed(ctx, pool, func(c *pgx.Conn) error { return tc.run(ctx, c) })
				var pgErr *pgconn.PgError
				switch {
				case tc.reason != "":
					if got := unconfirmedReason(err); got != tc.reason {
						t.Fatalf("reason %q (error %v), want %q", got, err, tc.reason)
					}
				case tc.sqlErr != "":
					if !errors.As(err, &pgErr) || pgErr.Code != tc.sqlErr || unconfirmedReason(err) != "" {
						t.Fatalf("error %v, want SQLSTATE %s, not an unconfirmed commit", err, tc.sqlErr)
					}
				case err != nil:
					t.Fatalf("error %v, want a confirmed commit", err)
				}
			})
		}
	})
	t.Run("conflict counted", func(t *testing.T) {
		// After the parallel cases: the unsigned-key duplicate's NOTICE was
		// counted, not taken for the sync-rep warning.
		var c dto.Metric
		if err := m.UnsignedConflicts.WithLabelValues("conflicts").Write(&c); err != nil {
			t.Fatal(err)
		}
		if got := c.GetCounter().GetValue(); got != 2 {
			t.Fatalf("pginbox_unsigned_key_conflicts_total{provider=conflicts} = %v, want 2 (one alone, one in a batch)", got)
		}
	})
}

// TestUnconfirmedSeriesServedFromStart: metrics.New serves
// pginbox_ingest_commit_unconfirmed_total at 0 for exactly the reasons
// confirmed() gives, so a rule's increase() sees the first one.
func TestUnconfirmedSeriesServedFromStart(t *testing.T) {
	t.Parallel()
	families, err := metrics.New(nil).Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{reasonSyncRepCancelled: true, reasonDeadline: true, reasonNoAnswer: true}
	got := map[string]bool{}
	for _, f := range families {
		if f.GetName() != "pginbox_ingest_commit_unconfirmed_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" {
					got[l.GetValue()] = true
				}
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("series served from the start for reasons %v, want %v", got, want)
	}
}
