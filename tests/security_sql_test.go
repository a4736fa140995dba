package tests

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/testsign"
)

// The attacks of the security review on the SQL API, one test each: every
// one of them succeeded before the fix.

// jsonHeaders marshals a header map for ingest_signed's headers argument.
func jsonHeaders(h map[string]string) string {
	b, _ := json.Marshal(h)
	return string(b)
}

// signedHeaders returns ingest_signed's headers argument signing body for a
// provider of kind with its kit's signer, with key as the header-carried
// idempotency key where the kind has one; for sume (whose kit keys by the
// body) a non-empty key goes into X-Sume-Event-Id.
func signedHeaders(kind, secret, key, body string, at time.Time) string {
	h := kitOf(kind).Sign(secret, body, key, at)
	if kind == "sume" && key != "" {
		h.Set("X-Sume-Event-Id", key)
	}
	return testsign.JSON(h)
}

// newGrantedRole creates a login role named prefix and a part of database
// (newRole), gives it grant and returns its name and a pool connected as it.
func newGrantedRole(t *testing.T, conf interface{ URL() string }, database, prefix, grant string) (string, *pgxpool.Pool) {
	t.Helper()
	role := prefix + strings.ReplaceAll(database[len(database)-8:], "-", "")
	pc, err := pgxpool.ParseConfig(newRole(t, conf.URL(), role, grant))
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return role, pool
}

// TestIngestSignedBounds: an unauthenticated delivery cannot make
// ingest_signed do unbounded work: more than 8 signatures or a signature
// header over 4 KiB are refused (28000) before any HMAC, headers over 64 KiB
// (22023), even when one of the signatures is valid.
func TestIngestSignedBounds(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	const secret = "bounds-secret-0123456789"
	for _, kind := range []string{"sume", "stripe", "standardwebhooks", "github"} {
		s := secret
		if kind == "standardwebhooks" {
			s = "whsec_" + base64.StdEncoding.EncodeToString([]byte(secret))
		}
		execSQL(t, pool, `SELECT webhooks.set_provider($1, $2, ARRAY[$3])`, "b_"+kind, kind, s)
	}
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	fake := hex.EncodeToString(make([]byte, 32))
	sumeSig := func(body string) string { return testsign.HMACHex([]byte(secret), ts, ".", body) }
	whSig := func(id, body string) string {
		return testsign.HMACBase64([]byte(secret), id, ".", ts, ".", body)
	}
	repeat := func(s string, n int, sep string) string { return strings.TrimSuffix(strings.Repeat(s+sep, n), sep) }

	tests := []struct {
		name, provider, body string
		headers              func(body string) map[string]string
		code, reason         string
	}{
		{"sume 8 signatures", "b_sume", `{"job_id":"j8","event":"job.completed"}`, func(b string) map[string]string {
			return map[string]string{"X-Sume-Timestamp": ts, "X-Sume-Signature": repeat("v1="+fake, 7, ",") + ",v1=" + sumeSig(b)}
		}, "", ""},
		{"sume 9 signatures", "b_sume", `{"job_id":"j9","event":"job.completed"}`, func(b string) map[string]string {
			return map[string]string{"X-Sume-Timestamp": ts, "X-Sume-Signature": repeat("v1="+fake, 8, ",") + ",v1=" + sumeSig(b)}
		}, "28000", "pginbox: too many signatures"},
		{"sume header over 4 KiB", "b_sume", `{"job_id":"jbig","event":"job.completed"}`, func(b string) map[string]string {
			return map[string]string{"X-Sume-Timestamp": ts, "X-Sume-Signature": "v1=" + sumeSig(b) + strings.Repeat(" ", 4100)}
		}, "28000", "pginbox: signature header too large"},
		{"stripe 9 signatures", "b_stripe", `{"id":"evt_9","type":"charge.succeeded"}`, func(b string) map[string]string {
			return map[string]string{"Stripe-Signature": "t=" + ts + "," + repeat("v1="+fake, 8, ",") + ",v1=" + sumeSig(b)}
		}, "28000", "pginbox: too many signatures"},
		{"standardwebhooks 9 signatures", "b_standardwebhooks", `{"type":"user.created"}`, func(b string) map[string]string {
			return map[string]string{"webhook-id": "msg_9", "webhook-timestamp": ts,
				"webhook-signature": repeat("v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)), 8, " ") + " v1," + whSig("msg_9", b)}
		}, "28000", "pginbox: too many signatures"},
		{"github header over 4 KiB", "b_github", `{"zen":"big"}`, func(b string) map[string]string {
			return map[string]string{"X-Hub-Signature-256": "sha256=" + testsign.HMACHex([]byte(secret), b) + strings.Repeat("\t", 4100),
				"X-GitHub-Delivery": "d-big", "X-GitHub-Event": "push"}
		}, "28000", "pginbox: signature header too large"},
		{"headers over 64 KiB", "b_sume", `{"job_id":"jpad","event":"job.completed"}`, func(b string) map[string]string {
			return map[string]string{"X-Sume-Timestamp": ts, "X-Sume-Signature": "v1=" + sumeSig(b), "X-Pad": strings.Repeat("p", 70000)}
		}, "22023", "pginbox: headers too large"},
	}
	for _, tt := range tests {
		var outcome string
		err := pool.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_signed($1, $2::jsonb, convert_to($3, 'UTF8'))`,
			tt.provider, jsonHeaders(tt.headers(tt.body)), tt.body).Scan(&outcome)
		if tt.code == "" {
			if err != nil || outcome != "created" {
				t.Errorf("%s: %q, %v; want created", tt.name, outcome, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted (%s); want %s %s", tt.name, outcome, tt.code, tt.reason)
			continue
		}
		wantPgError(t, err, tt.code, tt.reason)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events`); n != 1 {
		t.Fatalf("%d events stored, want only the one within bounds", n)
	}
}

// TestIngestSignedClockNotChoosable: a role granted ingest_signed cannot
// verify against a clock of its choice, neither directly nor from a session
// whose login role could read the secrets (SET ROLE, as PostgREST's
// authenticator does): a stale delivery stays refused.
func TestIngestSignedClockNotChoosable(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	owner := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	const secret = "clock-secret-0123456789"
	execSQL(t, owner, `SELECT webhooks.set_provider('clock', 'sume', ARRAY[$1])`, secret)
	// What grant_ingest_signed gives (spelled out, so this runs on any version).
	role, rolePool := newGrantedRole(t, conf, conf.Database, "pginbox_clock_", "")
	execSQL(t, owner, `GRANT USAGE ON SCHEMA webhooks TO `+pgx.Identifier{role}.Sanitize())
	execSQL(t, owner, `GRANT EXECUTE ON FUNCTION webhooks.ingest_signed TO `+pgx.Identifier{role}.Sanitize())
	// The owner (the login role here) may become the ingest role.
	su := PoolFor(t, SuperuserURL(t, conf.Database), 1)
	execSQL(t, su, fmt.Sprintf(`GRANT %s TO %s`, pgx.Identifier{role}.Sanitize(), pgx.Identifier{conf.User}.Sanitize()))

	old := time.Now().Add(-time.Hour)
	body := `{"job_id":"job_stale","event":"job.completed"}`
	headers := signedHeaders("sume", secret, "", body, old)
	calls := []struct{ name, sql string }{
		{"ingest_signed with at", `SELECT webhooks.ingest_signed('clock', $1::jsonb, convert_to($2, 'UTF8'), $3)`},
		{"ingest_signed named at", `SELECT webhooks.ingest_signed(provider => 'clock', headers => $1::jsonb, body => convert_to($2, 'UTF8'), at => $3)`},
		{"_ingest_signed_at", `SELECT webhooks._ingest_signed_at('clock', $1::jsonb, convert_to($2, 'UTF8'), $3)`},
	}
	for _, c := range calls {
		// As the role itself.
		if _, err := rolePool.Exec(ctx, c.sql, headers, body, old); err == nil {
			t.Errorf("as %s: %s accepted a stale delivery with a chosen clock", role, c.name)
		}
		// From the owner's session after SET ROLE: session_user is still the owner.
		conn, err := owner.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE `+pgx.Identifier{role}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, c.sql, headers, body, old); err == nil {
			t.Errorf("after SET ROLE %s: %s accepted a stale delivery with a chosen clock", role, c.name)
			_ = tx.Commit(ctx)
		} else {
			_ = tx.Rollback(ctx)
		}
		conn.Release()
	}
	_, err := rolePool.Exec(ctx, `SELECT webhooks.ingest_signed('clock', $1::jsonb, convert_to($2, 'UTF8'))`, headers, body)
	wantPgError(t, err, "28000", "pginbox: timestamp out of tolerance")
	if n := queryInt(t, owner, `SELECT count(*) FROM webhooks.events WHERE provider = 'clock'`); n != 0 {
		t.Fatalf("%d stale deliveries stored", n)
	}
}

// TestFindSequenceGapsWindowCap: a window of more than 1,000,000 ids is
// refused (54000) before any work; 1,000,000 ids (the bench's window) work.
func TestFindSequenceGapsWindowCap(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	ingest(t, pool, "seqcap", "5", "t", `{}`)
	tests := []struct {
		from, to int64
		code     string
		want     string
	}{
		{1, 1_000_000, "", ""},
		{1, 1_000_001, "54000", "holds 1000001 ids; the limit is 1000000"},
		{0, 999_999_999_999_999_999, "54000", "holds 1000000000000000000 ids"},
	}
	for _, tt := range tests {
		var n int64
		err := pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.find_sequence_gaps('seqcap', $1, $2)`, tt.from, tt.to).Scan(&n)
		if tt.code == "" {
			if err != nil || n != tt.to-tt.from {
				t.Errorf("[%d, %d]: %d gaps, %v; want %d", tt.from, tt.to, n, err, tt.to-tt.from)
			}
			continue
		}
		wantPgError(t, err, tt.code, tt.want)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && !strings.Contains(pgErr.Hint, "Split the window") {
			t.Errorf("[%d, %d]: hint %q does not say to split the window", tt.from, tt.to, pgErr.Hint)
		}
	}
}

// TestReaderCannotSeeSecretColumns: a reader cannot select
// expectations.status_url (presigned tokens) or contradictions.detail, can
// select every other column, and find_gaps shows it status_url as NULL. A
// role given whole tables by the old grant_reader is fixed by the migration.
func TestReaderCannotSeeSecretColumns(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	owner := PoolFor(t, conf.URL(), 2)
	ctx := context.Background()
	execSQL(t, owner, `INSERT INTO webhooks.expectations (provider, external_id, deadline, status_url)
		VALUES ('sume', 'gap1', now() - interval '1 hour', 'https://api.sume.dev/v1/jobs/gap1?token=presigned')`)
	id, _ := ingest(t, owner, "sume", "c1", "job.failed", `{"status": "ERROR"}`)
	execSQL(t, owner, `INSERT INTO webhooks.contradictions (event_id, kind, detail) VALUES ($1, 'error_missing', '{"x": "payload field"}')`, id)

	_, reader := newGrantedRole(t, conf, conf.Database, "pginbox_rdr_", "grant_reader")
	// A reader of the old grant_reader, then fixed by the migration.
	oldRole, oldReader := newGrantedRole(t, conf, conf.Database, "pginbox_oldrdr_", "grant_reader")
	execSQL(t, owner, `GRANT SELECT ON webhooks.expectations, webhooks.contradictions TO `+pgx.Identifier{oldRole}.Sanitize())
	// Run the migration that fixes such roles again, now that one exists.
	if files, _ := filepath.Glob("../sql/*/*_revoke_reader_secret_columns.sql"); len(files) != 1 {
		t.Errorf("migration revoke_reader_secret_columns: found %v", files)
	} else if src, err := os.ReadFile(files[0]); err != nil {
		t.Fatal(err)
	} else {
		execSQL(t, owner, string(src))
	}

	for name, pool := range map[string]*pgxpool.Pool{"reader": reader, "old reader": oldReader} {
		for _, sql := range []string{
			`SELECT status_url FROM webhooks.expectations`,
			`SELECT * FROM webhooks.expectations`,
			`SELECT detail FROM webhooks.contradictions`,
			`SELECT * FROM webhooks.contradictions`,
			`SELECT body_sha256 FROM webhooks.events`,
		} {
			_, err := pool.Exec(ctx, sql)
			wantPgError(t, err, "42501", "permission denied")
		}
		for _, sql := range []string{
			`SELECT provider, external_id, deadline, created_at, met_at, checks FROM webhooks.expectations`,
			`SELECT id, event_id, kind, detected_at FROM webhooks.contradictions`,
		} {
			if _, err := pool.Exec(ctx, sql); err != nil {
				t.Errorf("%s: %s: %v", name, sql, err)
			}
		}
		var ext string
		var url *string
		if err := pool.QueryRow(ctx, `SELECT external_id, status_url FROM webhooks.find_gaps()`).Scan(&ext, &url); err != nil {
			t.Fatalf("%s: find_gaps: %v", name, err)
		}
		if ext != "gap1" || url != nil {
			t.Errorf("%s: find_gaps = (%s, %v), want (gap1, NULL)", name, ext, *url)
		}
	}
	var url string
	if err := owner.QueryRow(ctx, `SELECT status_url FROM webhooks.find_gaps()`).Scan(&url); err != nil || !strings.Contains(url, "presigned") {
		t.Fatalf("owner: find_gaps status_url = %q, %v", url, err)
	}
}

// TestExpectCannotMoveStatusURL: once an expectation has a status_url, a
// call with a status_url on another origin raises 22023 naming both origins
// and changes nothing; the same origin (any case, explicit default port) or
// NULL works; a status_url must be an absolute http(s) URL.
func TestExpectCannotMoveStatusURL(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	ctx := context.Background()
	const first = "https://api.sume.dev/v1/jobs/j1/status"
	execSQL(t, pool, `SELECT webhooks.expect('sume', 'j1', now() + interval '1 hour', $1)`, first)
	stored := func() string {
		var u string
		if err := pool.QueryRow(ctx, `SELECT status_url FROM webhooks.expectations WHERE external_id = 'j1'`).Scan(&u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	tests := []struct {
		name, url  string
		code, want string
		after      string
	}{
		{"other host", "https://evil.example/v1/jobs/j1/status", "22023", "from origin https://api.sume.dev:443 to origin https://evil.example:443", first},
		{"other port", "https://api.sume.dev:8443/v1/jobs/j1/status", "22023", "to origin https://api.sume.dev:8443", first},
		{"other scheme", "http://api.sume.dev/v1/jobs/j1/status", "22023", "to origin http://api.sume.dev:80", first},
		{"userinfo", "https://api.sume.dev@evil.example/x", "22023", "to origin https://evil.example:443", first},
		{"not a URL", "javascript:alert(1)", "22023", "must be an absolute http(s) URL", first},
		{"no host", "https:///x", "22023", "must be an absolute http(s) URL", first},
		{"bad port", "https://api.sume.dev:99999/x", "22023", "must be an absolute http(s) URL", first},
		{"same origin, case and default port", "https://API.Sume.Dev:443/v1/jobs/j1/status?v=2", "", "", "https://API.Sume.Dev:443/v1/jobs/j1/status?v=2"},
		{"NULL keeps it", "", "", "", "https://API.Sume.Dev:443/v1/jobs/j1/status?v=2"},
	}
	for _, tt := range tests {
		var arg any
		if tt.url != "" {
			arg = tt.url
		}
		_, err := pool.Exec(ctx, `SELECT webhooks.expect('sume', 'j1', now() + interval '2 hours', $1)`, arg)
		if tt.code == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
		} else if err == nil {
			t.Errorf("%s: %s accepted", tt.name, tt.url)
		} else {
			wantPgError(t, err, tt.code, tt.want)
		}
		if got := stored(); got != tt.after {
			t.Errorf("%s: status_url = %s, want %s", tt.name, got, tt.after)
		}
	}
	// A fresh expectation may start on any origin; without one, any is fine too.
	execSQL(t, pool, `SELECT webhooks.expect('sume', 'j2', now() + interval '1 hour')`)
	execSQL(t, pool, `SELECT webhooks.expect('sume', 'j2', now() + interval '1 hour', 'http://localhost:8080/s')`)
}

// ingestDigest calls ingest_webhook with a body digest.
func ingestDigest(ctx context.Context, pool *pgxpool.Pool, provider, key, body string) (int64, string, error) {
	var id int64
	var outcome string
	sum := sha256.Sum256([]byte(body))
	err := pool.QueryRow(ctx,
		`SELECT event_id, outcome FROM webhooks.ingest_webhook($1, $2, 'push', $3::jsonb, body_sha256 => $4)`,
		provider, key, body, sum[:]).Scan(&id, &outcome)
	return id, outcome, err
}

// TestIngestBodyDigest: for keys from unsigned headers (body_sha256 given), a
// body already stored under another key is a duplicate of that event, even
// under many concurrent deliveries, and a known key is never updated.
func TestIngestBodyDigest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var notices []string
	pc, err := pgxpool.ParseConfig(NewConfig(t).URL())
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = 16
	pc.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n.Message+" "+n.Detail)
		mu.Unlock()
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ctx := context.Background()

	t.Run("one body under many fresh keys, concurrently", func(t *testing.T) {
		const n = 48
		body := `{"ref":"refs/heads/main","after":"captured"}`
		ids := make([]int64, n)
		outcomes := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ids[i], outcomes[i], errs[i] = ingestDigest(ctx, pool, "gh", fmt.Sprintf("delivery-%d", i), body)
			}()
		}
		close(start)
		wg.Wait()
		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("delivery %d: %v", i, errs[i])
			}
			if outcomes[i] == "created" {
				created++
			} else if outcomes[i] != "duplicate" {
				t.Errorf("delivery %d: outcome %s", i, outcomes[i])
			}
			if ids[i] != ids[0] {
				t.Errorf("delivery %d: event_id %d, want %d (the one stored)", i, ids[i], ids[0])
			}
		}
		if created != 1 {
			t.Errorf("%d created, want 1", created)
		}
		if rows := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'gh' AND payload ->> 'after' = 'captured'`); rows != 1 {
			t.Errorf("%d rows for one body, want 1", rows)
		}
	})

	t.Run("different body under a known pending key", func(t *testing.T) {
		id, outcome, err := ingestDigest(ctx, pool, "gh", "known", `{"n":1}`)
		if err != nil || outcome != "created" {
			t.Fatalf("first: %s, %v", outcome, err)
		}
		id2, outcome, err := ingestDigest(ctx, pool, "gh", "known", `{"n":2}`)
		if err != nil || outcome != "duplicate" || id2 != id {
			t.Fatalf("different body: (%d, %s, %v), want (%d, duplicate)", id2, outcome, err, id)
		}
		// Without a digest, the row stored under an unsigned key is not updated either.
		if _, outcome := ingest(t, pool, "gh", "known", "push", `{"n":3}`); outcome != "duplicate" {
			t.Fatalf("no digest on a digest row: %s, want duplicate", outcome)
		}
		if p := queryInt(t, pool, `SELECT (payload ->> 'n')::int FROM webhooks.events WHERE id = $1`, id); p != 1 {
			t.Fatalf("payload n = %d, want 1 (unchanged)", p)
		}
		mu.Lock()
		got := strings.Join(notices, "\n")
		mu.Unlock()
		if !strings.Contains(got, "pginbox: different body under a stored key") || !strings.Contains(got, "event_id "+strconv.FormatInt(id, 10)) {
			t.Errorf("no notice for the different body: %q", got)
		}
	})

	t.Run("no digest keeps updated", func(t *testing.T) {
		ingest(t, pool, "sume", "job1", "job.completed", `{"v":1}`)
		if _, outcome := ingest(t, pool, "sume", "job1", "job.completed", `{"v":2}`); outcome != "updated" {
			t.Fatalf("outcome %s, want updated", outcome)
		}
	})

	t.Run("after pruning", func(t *testing.T) {
		body := `{"after":"old"}`
		id, _, err := ingestDigest(ctx, pool, "ghp", "old-delivery", body)
		if err != nil {
			t.Fatal(err)
		}
		execSQL(t, pool, `UPDATE webhooks.events SET status = 'processed', processed_at = now(), received_at = now() - interval '2 days' WHERE id = $1`, id)
		execSQL(t, pool, `SELECT webhooks.prune('1 day', '30 days')`)
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND payload IS NULL`, id); n != 1 {
			t.Fatal("payload not pruned")
		}
		for _, key := range []string{"old-delivery", "fresh-delivery"} {
			got, outcome, err := ingestDigest(ctx, pool, "ghp", key, body)
			if err != nil || outcome != "duplicate" || got != id {
				t.Errorf("%s after prune: (%d, %s, %v), want (%d, duplicate)", key, got, outcome, err, id)
			}
		}
	})

	t.Run("bad digest", func(t *testing.T) {
		_, err := pool.Exec(ctx, `SELECT webhooks.ingest_webhook('gh', 'x', 'push', '{}', body_sha256 => '\x00'::bytea)`)
		wantPgError(t, err, "22023", "body_sha256 must be the 32-byte SHA-256")
	})
}

// TestIngestSignedReplayedBody: ingest_signed, for the kinds whose key comes
// from an unsigned header, answers a captured body replayed under a fresh key
// as a duplicate of the stored event, and never lets a different body replace
// a pending event's payload under its key.
func TestIngestSignedReplayedBody(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 4)
	ctx := context.Background()
	const secret = "replay-secret-0123456789"
	tests := []struct {
		kind, body, other string
	}{
		{"github", `{"action":"opened","number":1}`, `{"action":"opened","number":666}`},
		{"shopify", `{"order":1}`, `{"order":666}`},
		{"linear", linearSQLBody(1), linearSQLBody(666)},
		{"sume", `{"event":"job.completed","status":"COMPLETED"}`, `{"event":"job.completed","status":"FORGED"}`},
	}
	for _, tt := range tests {
		provider := "r_" + tt.kind
		execSQL(t, pool, `SELECT webhooks.set_provider($1, $2, ARRAY[$3])`, provider, tt.kind, secret)
		deliver := func(key, body string) (int64, string, error) {
			var id int64
			var outcome string
			err := pool.QueryRow(ctx, `SELECT event_id, outcome FROM webhooks.ingest_signed($1, $2::jsonb, convert_to($3, 'UTF8'))`,
				provider, signedHeaders(tt.kind, secret, key, body, time.Now()), body).Scan(&id, &outcome)
			return id, outcome, err
		}
		id, outcome, err := deliver("key-1", tt.body)
		if err != nil || outcome != "created" {
			t.Fatalf("%s: first delivery: %s, %v", tt.kind, outcome, err)
		}
		for _, key := range []string{"key-2", "key-3"} {
			if got, outcome, err := deliver(key, tt.body); err != nil || outcome != "duplicate" || got != id {
				t.Errorf("%s: captured body under %s: (%d, %s, %v), want (%d, duplicate)", tt.kind, key, got, outcome, err, id)
			}
		}
		if got, outcome, err := deliver("key-1", tt.other); err != nil || outcome != "duplicate" || got != id {
			t.Errorf("%s: other signed body under the pending key: (%d, %s, %v), want (%d, duplicate)", tt.kind, got, outcome, err, id)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1`, provider); n != 1 {
			t.Errorf("%s: %d rows, want 1", tt.kind, n)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND payload = $2::jsonb`, id, tt.body); n != 1 {
			t.Errorf("%s: the stored payload changed", tt.kind)
		}
	}
	// Keys from the signed body are not affected: two Stripe events may share a body shape.
	execSQL(t, pool, `SELECT webhooks.set_provider('r_stripe', 'stripe', ARRAY[$1])`, secret)
	for _, id := range []string{"evt_1", "evt_2"} {
		body := `{"id":"` + id + `","type":"charge.succeeded"}`
		var outcome string
		if err := pool.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_signed('r_stripe', $1::jsonb, convert_to($2, 'UTF8'))`,
			signedHeaders("stripe", secret, "", body, time.Now()), body).Scan(&outcome); err != nil || outcome != "created" {
			t.Errorf("stripe %s: %s, %v", id, outcome, err)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'r_stripe' AND body_sha256 IS NOT NULL`); n != 0 {
		t.Errorf("%d stripe rows with a digest, want 0", n)
	}
}

// linearSQLBody is a Linear delivery signed now (its webhookTimestamp).
func linearSQLBody(n int) string {
	return fmt.Sprintf(`{"action":"update","type":"Issue","data":{"n":%d},"webhookTimestamp":%d}`, n, time.Now().UnixMilli())
}
