package tests

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pginbox/pginbox/internal/testsign"
)

// TestIngestSignedRefusesBeforeVerifying: what one unauthenticated
// ingest_signed() call costs is bounded before any signature is computed. A
// timestamp more than 5 minutes from now() is refused, for every kind that
// signs one in a header, without one HMAC or Ed25519 verification, whatever
// the signatures; a standardwebhooks header with more than 2 v1a entries is
// refused before any, with a DETAIL naming the limit. The calls are counted
// in pg_stat_xact_user_functions (track_functions needs a superuser, hence
// the superuser connection); the last two cases show the count sees the
// verifications a fresh delivery does get.
func TestIngestSignedRefusesBeforeVerifying(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conf := NewConfig(t)
	su := Server(t)
	su.Database = conf.Database
	conn, err := pgx.Connect(ctx, su.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })

	_, configured, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const hmacSecret = "cost-secret-0123456789"
	whsec := "whsec_" + base64.StdEncoding.EncodeToString([]byte(hmacSecret))
	for _, p := range []struct {
		name, kind string
		secrets    []string
	}{
		{"sw", "standardwebhooks", []string{testsign.Whpk(configured), whsec}},
		{"sume", "sume", []string{hmacSecret}},
		{"stripe", "stripe", []string{hmacSecret}},
		{"paddle", "paddle", []string{hmacSecret}},
		{"slack", "slack", []string{hmacSecret}},
	} {
		if _, err := conn.Exec(ctx, `SELECT webhooks.set_provider($1, $2, $3)`, p.name, p.kind, p.secrets); err != nil {
			t.Fatal(err)
		}
	}

	now := time.Now()
	stale, future := now.Add(-6*time.Minute), now.Add(6*time.Minute)
	const id = "msg_cost"
	body := `{"type":"invoice.paid","event_id":"e1","id":"e1","job_id":"j1","event":"job.completed"}`
	// sw returns standardwebhooks headers signed at with signature.
	sw := func(at time.Time, signature string) http.Header {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
		h.Set("webhook-signature", signature)
		return h
	}
	// foreign returns n well-formed v1a entries over the delivery signed at,
	// each by a key the provider does not have.
	foreign := func(n int, at time.Time) string {
		entries := make([]string, n)
		for i := range entries {
			_, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			entries[i] = testsign.StandardWebhooksV1a(priv, id, body, at).Get("webhook-signature")
		}
		return strings.Join(entries, " ")
	}
	randomV1 := func(n int) string {
		entries := make([]string, n)
		for i := range entries {
			b := make([]byte, 32)
			if _, err := rand.Read(b); err != nil {
				t.Fatal(err)
			}
			entries[i] = "v1," + base64.StdEncoding.EncodeToString(b)
		}
		return strings.Join(entries, " ")
	}
	const wrong = "not-the-secret-0123456789"

	tests := []struct {
		name, provider string
		h              http.Header
		reason         string
		detail         string // a part of DETAIL, when it matters
		ed25519, hmac  int64  // webhooks._ed25519_verify and webhooks._hmac_sha256 calls
	}{
		{"stale, two foreign v1a", "sw", sw(stale, foreign(2, stale)), "timestamp out of tolerance", "", 0, 0},
		{"an hour old, two foreign v1a", "sw", sw(now.Add(-time.Hour), foreign(2, now.Add(-time.Hour))), "timestamp out of tolerance", "", 0, 0},
		{"future, two foreign v1a", "sw", sw(future, foreign(2, future)), "timestamp out of tolerance", "", 0, 0},
		{"stale, two foreign v1a and six v1", "sw", sw(stale, randomV1(6)+" "+foreign(2, stale)), "timestamp out of tolerance", "", 0, 0},
		{"stale, eight v1", "sw", sw(stale, randomV1(8)), "timestamp out of tolerance", "", 0, 0},
		{"fresh, three foreign v1a", "sw", sw(now, foreign(3, now)), "too many asymmetric signatures",
			"the limit is 2 v1a (Ed25519) signatures", 0, 0},
		{"stale, eight foreign v1a", "sw", sw(stale, foreign(8, stale)), "too many asymmetric signatures",
			"the limit is 2 v1a (Ed25519) signatures", 0, 0},
		{"fresh, nine v1a", "sw", sw(now, foreign(9, now)), "too many signatures", "the limit is 8 signatures", 0, 0},
		{"sume, stale, wrong secret", "sume", testsign.Sume(wrong, body, stale), "timestamp out of tolerance", "", 0, 0},
		{"stripe, stale, wrong secret", "stripe", testsign.Stripe(wrong, body, stale), "timestamp out of tolerance", "", 0, 0},
		{"paddle, future, wrong secret", "paddle", testsign.Paddle(wrong, body, future), "timestamp out of tolerance", "", 0, 0},
		{"slack, stale, wrong secret", "slack", testsign.Slack(wrong, body, stale), "timestamp out of tolerance", "", 0, 0},
		// The count sees what a fresh forgery costs: each v1a entry verified
		// with the one whpk_ key (and no MAC: there is no v1 to compare), or
		// one MAC for the one whsec_ secret.
		{"fresh, two foreign v1a: verified", "sw", sw(now, foreign(2, now)), "signature mismatch", "", 2, 0},
		{"fresh, eight v1: one MAC", "sw", sw(now, randomV1(8)), "signature mismatch", "", 0, 1},
	}
	for _, tt := range tests {
		reason, detail, ed, mac := signedCalls(t, conn, tt.provider, testsign.JSON(tt.h), body)
		if reason != tt.reason || !strings.Contains(detail, tt.detail) {
			t.Errorf("%s: refused with %q (DETAIL %q), want %q (DETAIL with %q)", tt.name, reason, detail, tt.reason, tt.detail)
		}
		if ed != tt.ed25519 || mac != tt.hmac {
			t.Errorf("%s: %d Ed25519 verifications and %d HMACs before the refusal, want %d and %d",
				tt.name, ed, mac, tt.ed25519, tt.hmac)
		}
	}
}

// signedCalls calls ingest_signed in a transaction of its own (so now() is
// the call's), expects it to refuse the delivery, and returns the reason,
// the DETAIL and how many times it called webhooks._ed25519_verify and
// webhooks._hmac_sha256: the difference of pg_stat_xact_user_functions
// around the call, since that view also shows earlier transactions' calls
// the backend has not reported yet (it reports them when idle, never inside
// a transaction).
func signedCalls(t *testing.T, conn *pgx.Conn, provider, headers, body string) (reason, detail string, ed25519, hmac int64) {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL track_functions = 'pl'`); err != nil {
		t.Fatal(err)
	}
	counts := func() (ed, mac int64) {
		if err := tx.QueryRow(ctx, `
			SELECT coalesce(sum(calls) FILTER (WHERE funcname = '_ed25519_verify'), 0),
			       coalesce(sum(calls) FILTER (WHERE funcname = '_hmac_sha256'), 0)
			FROM pg_catalog.pg_stat_xact_user_functions
			WHERE schemaname = 'webhooks'`).Scan(&ed, &mac); err != nil {
			t.Fatal(err)
		}
		return ed, mac
	}
	ed0, mac0 := counts()
	if _, err := tx.Exec(ctx, `SAVEPOINT call`); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, `SELECT * FROM webhooks.ingest_signed($1, $2::jsonb, convert_to($3, 'UTF8'))`, provider, headers, body)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "28000" {
		t.Fatalf("ingest_signed(%s) = %v, want a 28000 refusal", provider, err)
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT call`); err != nil {
		t.Fatal(err)
	}
	ed1, mac1 := counts()
	return strings.TrimPrefix(pgErr.Message, "pginbox: "), pgErr.Detail, ed1 - ed0, mac1 - mac0
}
