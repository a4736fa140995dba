package backfill

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestBackfillIngestCommitsDurably: backfill's ingest transaction (both
// passes store through ingestEvent) commits with synchronous_commit on,
// though the role's default in the database is off, and keeps remote_apply
// when that is the connection's setting. A deferred constraint trigger on
// webhooks.events reads the setting at commit, where it takes effect.
func TestBackfillIngestCommitsDurably(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conf := pgtest.NewConfig(t)
	setup := pgtest.PoolFor(t, conf.URL(), 1)
	for _, q := range []string{
		fmt.Sprintf(`ALTER ROLE CURRENT_USER IN DATABASE %s SET synchronous_commit = off`, pgx.Identifier{conf.Database}.Sanitize()),
		`CREATE TABLE public.commit_settings (external_id text, setting text)`,
		`CREATE FUNCTION public.capture_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.commit_settings VALUES (NEW.external_id, current_setting('synchronous_commit'));
			RETURN NULL;
		END $$`,
		`CREATE CONSTRAINT TRIGGER capture_commit_setting AFTER INSERT ON webhooks.inbox
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.capture_commit_setting()`,
	} {
		if _, err := setup.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, key, session, want string
	}{
		{"role default off", "job_off", "", "on"},
		{"remote_apply kept", "job_apply", "remote_apply", "remote_apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := conf.URL()
			if tc.session != "" {
				url += "&options=-c%20synchronous_commit%3D" + tc.session
			}
			pool := pgtest.PoolFor(t, url, 1)
			var before string
			if err := pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"": "off"}[tc.session]; want != "" && before != want {
				t.Fatalf("synchronous_commit is %q before the ingest, want the role's default %q", before, want)
			}
			outcome, err := ingestEvent(ctx, pool, "sume", tc.key, "job.completed", json.RawMessage(`{"id": "`+tc.key+`"}`))
			if err != nil || outcome != "created" {
				t.Fatalf("ingestEvent = %q, %v; want created", outcome, err)
			}
			var got string
			if err := pool.QueryRow(ctx, `SELECT setting FROM public.commit_settings WHERE external_id = $1`, tc.key).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("synchronous_commit at the backfill ingest's commit = %q, want %q", got, tc.want)
			}
		})
	}
}
