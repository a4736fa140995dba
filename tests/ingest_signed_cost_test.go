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
// verifications a fresh delivery does get. No call computes the multiples of
// the whpk_ key (webhooks._ed25519_table): set_provider stored them.
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
		reason, detail, ed, mac, tables := signedCalls(t, conn, tt.provider, testsign.JSON(tt.h), body)
		if reason != tt.reason || !strings.Contains(detail, tt.detail) {
			t.Errorf("%s: refused with %q (DETAIL %q), want %q (DETAIL with %q)", tt.name, reason, detail, tt.reason, tt.detail)
		}
		if ed != tt.ed25519 || mac != tt.hmac {
			t.Errorf("%s: %d Ed25519 verifications and %d HMACs before the refusal, want %d and %d",
				tt.name, ed, mac, tt.ed25519, tt.hmac)
		}
		if tables != 0 {
			t.Errorf("%s: the key's multiples computed %d times during the call, want 0 (read from ed25519_key_tables)", tt.name, tables)
		}
	}
}

// signedCalls calls ingest_signed in a transaction of its own (so now() is
// the call's), expects it to refuse the delivery, and returns the reason,
// the DETAIL and how many times it called webhooks._ed25519_verify,
// webhooks._hmac_sha256 and webhooks._ed25519_table: the difference of pg_stat_xact_user_functions
// around the call, since that view also shows earlier transactions' calls
// the backend has not reported yet (it reports them when idle, never inside
// a transaction).
func signedCalls(t *testing.T, conn *pgx.Conn, provider, headers, body string) (reason, detail string, ed25519, hmac, tables int64) {
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
	counts := func() (ed, mac, tab int64) {
		if err := tx.QueryRow(ctx, `
			SELECT coalesce(sum(calls) FILTER (WHERE funcname = '_ed25519_verify'), 0),
			       coalesce(sum(calls) FILTER (WHERE funcname = '_hmac_sha256'), 0),
			       coalesce(sum(calls) FILTER (WHERE funcname = '_ed25519_table'), 0)
			FROM pg_catalog.pg_stat_xact_user_functions
			WHERE schemaname = 'webhooks'`).Scan(&ed, &mac, &tab); err != nil {
			t.Fatal(err)
		}
		return ed, mac, tab
	}
	ed0, mac0, tab0 := counts()
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
	ed1, mac1, tab1 := counts()
	return strings.TrimPrefix(pgErr.Message, "pginbox: "), pgErr.Detail, ed1 - ed0, mac1 - mac0, tab1 - tab0
}

// TestIngestSignedEd25519Cost: what the dearest refusal left costs (a fresh
// standardwebhooks delivery with two v1a entries signed by other keys: two
// Ed25519 verifications under the provider's whpk_ key), counted in the unit
// of the arithmetic it is made of, so that the bound holds on a loaded
// machine: the server time of a product modulo p (numeric, reduced as
// _ed25519_verify reduces, in a plpgsql loop) is measured in the same
// backend, interleaved with the calls, in loops about as long as what they
// are compared with (1000 products for a verification, 3000 for the call:
// on a busy machine a longer stretch is more often interrupted), and the
// least of 15 rounds compared (being interrupted only ever adds time).
// One verification must cost at most 2500 products (about 1300 with the
// key's multiples precomputed; 6200 when it doubled 253 times) and the
// refused call at most 5000 (about 2900; 11300 before). All of it runs
// with ingest_signed's search_path: plans made under another would be made
// again on every switch.
func TestIngestSignedEd25519Cost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, NewConfig(t).URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	_, configured, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT webhooks.set_provider('sw', 'standardwebhooks', $1)`,
		[]string{testsign.Whpk(configured)}); err != nil {
		t.Fatal(err)
	}
	const id, body = "msg_cost", `{"type":"invoice.paid"}`
	now := time.Now()
	entries := make([]string, 2)
	var foreignSig []byte
	for i := range entries {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		entries[i] = testsign.StandardWebhooksV1a(priv, id, body, now).Get("webhook-signature")
		foreignSig, err = base64.StdEncoding.DecodeString(strings.TrimPrefix(entries[i], "v1a,"))
		if err != nil {
			t.Fatal(err)
		}
	}
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", strings.Join(entries, " "))
	signed := []byte(id + "." + strconv.FormatInt(now.Unix(), 10) + "." + body)

	if _, err := conn.Exec(ctx, `
		CREATE FUNCTION pg_temp.ed25519_cost(pub bytea, msg bytea, sig bytea, headers jsonb, body bytea, rounds integer,
		    OUT product double precision, OUT product3 double precision,
		    OUT verification double precision, OUT refusal double precision)
		LANGUAGE plpgsql
		SET search_path = pg_catalog, pg_temp
		AS $$
		DECLARE
		    c_p CONSTANT numeric := 57896044618658097711785492504343953926634992332820282019728792003956564819949;
		    c_m CONSTANT numeric := 0.0000000000000000000000000000000000000000000000000000000000000000000000000000172723371101888892507727037256007991422320007288725627700474069403371836063305224548;
		    v_x numeric := 37095705934669439343138083508754565189542113879843219016388785533085940283555;
		    v_t numeric;
		    v_t0 timestamptz;
		    v_p double precision[] := '{}';
		    v_p3 double precision[] := '{}';
		    v_v double precision[] := '{}';
		    v_c double precision[] := '{}';
		BEGIN
		    -- Round 0 is not counted: the first call of each makes its plans.
		    FOR v_r IN 0..rounds LOOP
		        v_t0 := clock_timestamp();
		        FOR v_i IN 1..1000 LOOP
		            v_t := v_x * v_x;
		            v_x := v_t - trunc(v_t * c_m) * c_p;
		        END LOOP;
		        IF v_r > 0 THEN
		            v_p := v_p || extract(epoch FROM clock_timestamp() - v_t0) / 1000;
		        END IF;
		        v_t0 := clock_timestamp();
		        IF webhooks._ed25519_verify(pub, msg, sig) THEN
		            RAISE EXCEPTION 'a foreign signature verified';
		        END IF;
		        IF v_r > 0 THEN
		            v_v := v_v || extract(epoch FROM clock_timestamp() - v_t0);
		        END IF;
		        v_t0 := clock_timestamp();
		        FOR v_i IN 1..3000 LOOP
		            v_t := v_x * v_x;
		            v_x := v_t - trunc(v_t * c_m) * c_p;
		        END LOOP;
		        IF v_r > 0 THEN
		            v_p3 := v_p3 || extract(epoch FROM clock_timestamp() - v_t0) / 3000;
		        END IF;
		        v_t0 := clock_timestamp();
		        BEGIN
		            PERFORM * FROM webhooks.ingest_signed('sw', headers, body);
		            RAISE EXCEPTION 'the forged delivery was accepted';
		        EXCEPTION WHEN invalid_authorization_specification THEN
		            NULL;
		        END;
		        IF v_r > 0 THEN
		            v_c := v_c || extract(epoch FROM clock_timestamp() - v_t0);
		        END IF;
		    END LOOP;
		    SELECT min(x) INTO product FROM unnest(v_p) AS x;
		    SELECT min(x) INTO product3 FROM unnest(v_p3) AS x;
		    SELECT min(x) INTO verification FROM unnest(v_v) AS x;
		    SELECT min(x) INTO refusal FROM unnest(v_c) AS x;
		END;
		$$`); err != nil {
		t.Fatal(err)
	}
	var product, product3, verification, refusal float64
	if err := conn.QueryRow(ctx, `SELECT * FROM pg_temp.ed25519_cost($1, $2, $3, $4::jsonb, convert_to($5, 'UTF8'), 15)`,
		[]byte(configured.Public().(ed25519.PublicKey)), signed, foreignSig, testsign.JSON(h), body).
		Scan(&product, &product3, &verification, &refusal); err != nil {
		t.Fatal(err)
	}
	t.Logf("least of 15: a product modulo p %.2f µs (%.2f in a loop of 3000), a verification %.2f ms (%.0f products), the refused delivery %.2f ms (%.0f products)",
		product*1e6, product3*1e6, verification*1e3, verification/product, refusal*1e3, refusal/product3)
	if verification/product > 2500 {
		t.Errorf("one Ed25519 verification costs %.0f products modulo p, want at most 2500", verification/product)
	}
	if refusal/product3 > 5000 {
		t.Errorf("a fresh delivery with two foreign v1a entries costs %.0f products modulo p before its refusal, want at most 5000", refusal/product3)
	}
}
