package tests

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner/verify"
)

// signatureVector is one case of testdata/vectors/<kind>.json, written by
// tests/cmd/genvectors. Each runs through the Go verifier and the SQL one.
type signatureVector struct {
	Name    string          `json:"name"`
	Kind    string          `json:"kind"`
	Secrets []string        `json:"secrets"`
	Headers json.RawMessage `json:"headers"` // name -> string or array of strings
	Body    string          `json:"body"`
	// BodyBase64, when set, is the body instead of Body (bodies that are not UTF-8).
	BodyBase64 string  `json:"body_base64"`
	At         int64   `json:"at"` // unix seconds: the verifier's clock
	Want       verdict `json:"want"`
	// GoDiffers explains a known disagreement of the Go verifier with Want.
	GoDiffers string `json:"go_differs"`
	// URL is the URL the provider was given, for the kinds that sign it (square).
	URL string `json:"url"`
}

// verdict is a rejection (Status, Reason) or an accepted delivery (ExternalID, EventType).
type verdict struct {
	Status     int    `json:"status"`
	Reason     string `json:"reason"`
	ExternalID string `json:"external_id"`
	EventType  string `json:"event_type"`
}

func (v verdict) String() string {
	if v.Status != 0 {
		return fmt.Sprintf("rejected %d %q", v.Status, v.Reason)
	}
	return fmt.Sprintf("accepted (%q, %q)", v.ExternalID, v.EventType)
}

// sqlStatus maps the SQLSTATEs of webhooks.ingest_signed to the runner's HTTP statuses.
var sqlStatus = map[string]int{
	"28000": http.StatusUnauthorized, // invalid_authorization_specification
	"22023": http.StatusBadRequest,   // invalid_parameter_value
	"42704": http.StatusNotFound,     // undefined_object
}

// vectorsDir holds one file of vectors per kind, <kind>.json, written by
// tests/cmd/genvectors.
const vectorsDir = "testdata/vectors"

func loadVectors(t *testing.T) []signatureVector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(vectorsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no vectors in %s", vectorsDir)
	}
	var all []signatureVector
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var vs []signatureVector
		if err := dec.Decode(&vs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kind := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, v := range vs {
			if v.Kind != kind {
				t.Fatalf("%s: vector %s is of kind %s", f, v.Name, v.Kind)
			}
		}
		all = append(all, vs...)
	}
	return all
}

func (v signatureVector) body(t testing.TB) []byte {
	if v.BodyBase64 == "" {
		return []byte(v.Body)
	}
	b, err := base64.StdEncoding.DecodeString(v.BodyBase64)
	if err != nil {
		t.Fatalf("%s: body_base64: %v", v.Name, err)
	}
	return b
}

// httpHeader builds the http.Header the runner would see.
func (v signatureVector) httpHeader(t testing.TB) http.Header {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(v.Headers, &raw); err != nil {
		t.Fatalf("%s: headers: %v", v.Name, err)
	}
	h := http.Header{}
	for name, value := range raw {
		var one string
		if err := json.Unmarshal(value, &one); err == nil {
			h.Add(name, one)
			continue
		}
		var many []string
		if err := json.Unmarshal(value, &many); err != nil {
			t.Fatalf("%s: header %s: %v", v.Name, name, err)
		}
		for _, s := range many {
			h.Add(name, s)
		}
	}
	return h
}

// goVerdict runs the vector through verify.Provider: Verify, then Identify.
func goVerdict(t testing.TB, v signatureVector) verdict {
	p, err := verify.NewWithURL(v.Kind, v.Secrets, v.URL)
	if err != nil {
		t.Fatalf("verify.NewWithURL: %v", err)
	}
	h, body := v.httpHeader(t), v.body(t)
	err = p.Verify(h, body, time.Unix(v.At, 0))
	var d verify.Delivery
	if err == nil {
		d, err = p.Identify(h, body)
	}
	if err != nil {
		var rej *verify.RejectError
		if !errors.As(err, &rej) {
			t.Fatalf("Go verifier: %v (%T), want a *verify.RejectError", err, err)
		}
		return verdict{Status: rej.Status, Reason: rej.Reason}
	}
	return verdict{ExternalID: d.ExternalID, EventType: d.EventType}
}

// signedDB is a migrated database for ingest_signed tests: an owner pool that
// records every notice the server sends.
type signedDB struct {
	pool *pgxpool.Pool

	mu      sync.Mutex
	notices []string
}

func newSignedDB(t *testing.T) *signedDB {
	t.Helper()
	db := &signedDB{}
	pc, err := pgxpool.ParseConfig(NewConfig(t).URL())
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = 20
	pc.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		db.mu.Lock()
		db.notices = append(db.notices, n.Severity+": "+n.Message+" "+n.Detail+" "+n.Hint+" "+n.Where)
		db.mu.Unlock()
	}
	db.pool, err = pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.pool.Close)
	return db
}

// sqlVerdict configures provider with the vector's kind and secrets, runs the
// vector through webhooks._ingest_signed_at (ingest_signed with the vector's
// clock, owner only) and checks what it wrote: one row with
// the key, type and body on success, no row on a rejection. It also returns
// the full text of the error, if any.
func sqlVerdict(t testing.TB, pool *pgxpool.Pool, provider string, v signatureVector) (verdict, string) {
	ctx := context.Background()
	var url *string // NULL for the kinds that sign no URL
	if v.URL != "" {
		url = &v.URL
	}
	execSQL(t, pool, `SELECT webhooks.set_provider($1, $2, $3, $4)`, provider, v.Kind, v.Secrets, url)
	var id int64
	var outcome string
	err := pool.QueryRow(ctx,
		`SELECT event_id, outcome FROM webhooks._ingest_signed_at($1, $2::jsonb, $3, to_timestamp($4))`,
		provider, string(v.Headers), v.body(t), v.At).Scan(&id, &outcome)
	rows := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = $1`, provider)
	if err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			t.Fatalf("ingest_signed: %v", err)
		}
		status, ok := sqlStatus[pgErr.Code]
		if !ok || !strings.HasPrefix(pgErr.Message, "pginbox: ") {
			t.Fatalf("ingest_signed: unexpected error %s: %s", pgErr.Code, pgErr.Message)
		}
		if rows != 0 {
			t.Fatalf("ingest_signed rejected the delivery (%s) but wrote %d row(s)", pgErr.Message, rows)
		}
		full := strings.Join([]string{pgErr.Message, pgErr.Detail, pgErr.Hint, pgErr.Where}, "\n")
		return verdict{Status: status, Reason: strings.TrimPrefix(pgErr.Message, "pginbox: ")}, full
	}
	if outcome != "created" || rows != 1 {
		t.Fatalf("ingest_signed = (%d, %q) with %d row(s), want one created row", id, outcome, rows)
	}
	var got verdict
	var source string
	var samePayload bool
	if err := pool.QueryRow(ctx,
		`SELECT external_id, event_type, source, payload = convert_from($3, 'UTF8')::jsonb
		 FROM webhooks.events WHERE id = $1 AND provider = $2`,
		id, provider, v.body(t)).Scan(&got.ExternalID, &got.EventType, &source, &samePayload); err != nil {
		t.Fatalf("read the stored event: %v", err)
	}
	if source != "webhook" || !samePayload {
		t.Fatalf("stored event: source %q, payload equal to the body: %v", source, samePayload)
	}
	return got, ""
}

// TestSignatureVectors runs every shared vector through the Go verifier and
// webhooks.ingest_signed and requires both to give the expected verdict.
func TestSignatureVectors(t *testing.T) {
	t.Parallel()
	vectors := loadVectors(t)
	db := newSignedDB(t)

	var mu sync.Mutex
	var errorTexts []string // every rejection's full error text, for the leak check
	t.Run("cases", func(t *testing.T) {
		for i, v := range vectors {
			t.Run(v.Name, func(t *testing.T) {
				t.Parallel()
				goGot := goVerdict(t, v)
				sqlGot, text := sqlVerdict(t, db.pool, "vec"+strconv.Itoa(i), v)
				if sqlGot != v.Want {
					t.Errorf("SQL verifier: %v, want %v", sqlGot, v.Want)
				}
				switch {
				case v.GoDiffers == "" && goGot != v.Want:
					t.Errorf("Go verifier: %v, want %v", goGot, v.Want)
				case v.GoDiffers != "" && goGot != v.Want:
					t.Logf("known Go divergence: Go %v, SQL and the documented answer %v: %s", goGot, v.Want, v.GoDiffers)
				case v.GoDiffers != "":
					t.Logf("the Go verifier now agrees: drop go_differs from this vector in tests/cmd/genvectors")
				}
				if text != "" {
					mu.Lock()
					errorTexts = append(errorTexts, text)
					mu.Unlock()
				}
			})
		}
	})

	// Secrets never appear in an error, a notice or a comment.
	var secrets []string
	for _, v := range vectors {
		for _, s := range v.Secrets {
			secrets = append(secrets, s, strings.TrimPrefix(s, "whsec_"))
		}
	}
	var comments []string
	rows, err := db.pool.Query(context.Background(), `
		SELECT d.description FROM pg_description AS d
		JOIN pg_proc AS p ON d.classoid = 'pg_proc'::regclass AND d.objoid = p.oid
		WHERE p.pronamespace = 'webhooks'::regnamespace
		UNION ALL
		SELECT d.description FROM pg_description AS d
		JOIN pg_class AS c ON d.classoid = 'pg_class'::regclass AND d.objoid = c.oid
		WHERE c.relnamespace = 'webhooks'::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	comments, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	notices := db.notices
	db.mu.Unlock()
	if len(errorTexts) < 100 {
		t.Fatalf("only %d rejections seen; the leak check needs them all", len(errorTexts))
	}
	for _, s := range secrets {
		for what, texts := range map[string][]string{"error": errorTexts, "notice": notices, "comment": comments} {
			for _, text := range texts {
				if strings.Contains(text, s) {
					t.Errorf("a secret appears in a %s: %q", what, text)
				}
			}
		}
	}
}

// TestSignatureVectorsCoverage checks the shared vectors cover every kind and
// every reason of the runner, with the categories each kind must have.
func TestSignatureVectorsCoverage(t *testing.T) {
	t.Parallel()
	vectors := loadVectors(t)
	names := map[string]bool{}
	reasons := map[string]bool{}
	perKind := map[string]map[string]bool{}
	for _, v := range vectors {
		if names[v.Name] {
			t.Errorf("duplicate vector name %q", v.Name)
		}
		names[v.Name] = true
		rejected := v.Want.Status != 0 && v.Want.Reason != "" && v.Want.ExternalID == "" && v.Want.EventType == ""
		accepted := v.Want.Status == 0 && v.Want.Reason == "" && v.Want.ExternalID != "" && v.Want.EventType != ""
		if !rejected && !accepted {
			t.Errorf("%s: want must be either {status, reason} or {external_id, event_type}", v.Name)
		}
		reasons[v.Want.Reason] = true
		if perKind[v.Kind] == nil {
			perKind[v.Kind] = map[string]bool{}
		}
		perKind[v.Kind][v.Want.Reason] = true
		if v.Want.Status == 0 && len(v.Secrets) > 1 && v.Secrets[0] != v.Secrets[1] {
			perKind[v.Kind]["rotation"] = true
		}
	}
	for _, r := range []string{
		verify.ReasonSignatureMissing, verify.ReasonSignatureMalformed, verify.ReasonSignatureMismatch,
		verify.ReasonTimestampMissing, verify.ReasonTimestampMalformed, verify.ReasonTimestampOutOfTolerance,
		verify.ReasonSignatureHeaderTooLarge, verify.ReasonTooManySignatures, verify.ReasonTooManyAsymmetricSignatures,
		verify.ReasonBodyNotJSON, verify.ReasonBodyTooDeep, verify.ReasonKeyMissing, verify.ReasonKeyInvalid, verify.ReasonEventIDMismatch,
		verify.ReasonEventTypeMissing, verify.ReasonEventTypeInvalid,
	} {
		if !reasons[r] {
			t.Errorf("no vector expects %q", r)
		}
	}
	for _, kind := range verify.Kinds() {
		need := []string{"", "rotation", verify.ReasonSignatureMismatch, verify.ReasonSignatureMissing,
			verify.ReasonSignatureMalformed, verify.ReasonKeyMissing, verify.ReasonEventTypeMissing, verify.ReasonBodyNotJSON}
		if kind == "sume" || kind == "stripe" || kind == "standardwebhooks" || kind == "slack" || kind == "linear" {
			need = append(need, verify.ReasonTimestampOutOfTolerance, verify.ReasonTimestampMissing, verify.ReasonTimestampMalformed)
		}
		for _, r := range need {
			if !perKind[kind][r] {
				t.Errorf("kind %s: no vector for %q", kind, r)
			}
		}
	}
}

// TestHMACSHA256RFC4231 checks webhooks._hmac_sha256 against the test cases of
// RFC 4231 (HMAC-SHA256), and against Go's crypto/hmac.
func TestHMACSHA256RFC4231(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 4)
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rep := func(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }
	tests := []struct {
		name      string
		key, data []byte
		want      string // hex; test case 5 is truncated to 128 bits
	}{
		{"1", rep(0x0b, 20), []byte("Hi There"),
			"b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
		{"2: key shorter than the output", []byte("Jefe"), []byte("what do ya want for nothing?"),
			"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{"3: combined length over 64", rep(0xaa, 20), rep(0xdd, 50),
			"773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
		{"4", unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"), rep(0xcd, 50),
			"82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
		{"5: truncated", rep(0x0c, 20), []byte("Test With Truncation"),
			"a3b6167473100ee06e0c796c2955552b"},
		{"6: key larger than the block", rep(0xaa, 131), []byte("Test Using Larger Than Block-Size Key - Hash Key First"),
			"60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
		{"7: key and data larger than the block", rep(0xaa, 131),
			[]byte("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm."),
			"9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
	}
	for _, tt := range tests {
		t.Run("test case "+tt.name, func(t *testing.T) {
			t.Parallel()
			var got []byte
			if err := pool.QueryRow(context.Background(), `SELECT webhooks._hmac_sha256($1, $2)`, tt.key, tt.data).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(hex.EncodeToString(got), tt.want) || len(got) != sha256.Size {
				t.Fatalf("_hmac_sha256 = %x, want %s", got, tt.want)
			}
		})
	}

	t.Run("same as crypto/hmac for keys of 0 to 200 bytes", func(t *testing.T) {
		t.Parallel()
		msg := make([]byte, 300)
		if _, err := rand.Read(msg); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 31, 32, 63, 64, 65, 127, 128, 200} {
			key := make([]byte, n)
			if _, err := rand.Read(key); err != nil {
				t.Fatal(err)
			}
			m := hmac.New(sha256.New, key)
			m.Write(msg[:n])
			var got []byte
			if err := pool.QueryRow(context.Background(), `SELECT webhooks._hmac_sha256($1, $2)`, key, msg[:n]).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := m.Sum(nil); !bytes.Equal(got, want) {
				t.Errorf("key of %d bytes: _hmac_sha256 = %x, crypto/hmac %x", n, got, want)
			}
		}
	})

	t.Run("STRICT: NULL in, NULL out", func(t *testing.T) {
		t.Parallel()
		var isNull bool
		if err := pool.QueryRow(context.Background(), `SELECT webhooks._hmac_sha256(NULL, 'x'::bytea) IS NULL`).Scan(&isNull); err != nil || !isNull {
			t.Fatalf("_hmac_sha256(NULL, x) IS NULL = %v, %v", isNull, err)
		}
	})
}

func TestSignedEqualCT(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	tests := []struct {
		a, b string // hex
		want bool
	}{
		{"", "", true},
		{"00", "00", true},
		{"0102ff", "0102ff", true},
		{"0102ff", "0102fe", false},
		{"8102ff", "0102ff", false},
		{"0102", "010200", false},
		{"010200", "0102", false},
		{"00", "", false},
		{"", "00", false},
	}
	for _, tt := range tests {
		var got bool
		if err := pool.QueryRow(context.Background(),
			`SELECT webhooks._equal_ct(decode($1, 'hex'), decode($2, 'hex'))`, tt.a, tt.b).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("_equal_ct(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestSignedSecretsOwnerOnly checks that a role granted EXECUTE on
// ingest_signed can ingest verified deliveries but cannot read the secrets,
// configure providers or move the tolerance clock.
func TestSignedSecretsOwnerOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conf := NewConfig(t)
	owner := PoolFor(t, conf.URL(), 4)
	const secret = "owner-only-secret-3f9a1c"
	execSQL(t, owner, `SELECT webhooks.set_provider('live', 'sume', ARRAY[$1])`, secret)

	// The test role owner (pgtestdb's pgtdbuser) has NOCREATEROLE: the server's
	// superuser creates the role; the owner grants it what ingesting needs.
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	role := "pginbox_signed_" + hex.EncodeToString(rnd[:])
	password := hex.EncodeToString(rnd[:]) + "pw"
	su := PoolFor(t, SuperuserURL(t, conf.Database), 2)
	ident := pgx.Identifier{role}.Sanitize()
	execSQL(t, su, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, ident, password))
	t.Cleanup(func() {
		// Runs before pgtestdb drops the database, after the role's pool closed.
		for _, q := range []string{`DROP OWNED BY ` + ident, `DROP ROLE ` + ident} {
			if _, err := su.Exec(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	execSQL(t, owner, `GRANT USAGE ON SCHEMA webhooks TO `+ident)
	execSQL(t, owner, `GRANT EXECUTE ON FUNCTION webhooks.ingest_signed(text, jsonb, bytea, text) TO `+ident)
	rc := *conf
	rc.User, rc.Password = role, password
	pool := PoolFor(t, rc.URL(), 2)

	_, err := pool.Exec(ctx, `SELECT * FROM webhooks.provider_secrets`)
	wantPgError(t, err, "42501", "permission denied")
	_, err = pool.Exec(ctx, `SELECT webhooks.set_provider('live', 'sume', ARRAY['mine'])`)
	wantPgError(t, err, "42501", "permission denied")
	_, err = pool.Exec(ctx, `SELECT webhooks.drop_provider('live')`)
	wantPgError(t, err, "42501", "permission denied")
	_, err = pool.Exec(ctx, `DELETE FROM webhooks.provider_secrets`)
	wantPgError(t, err, "42501", "permission denied")

	body := `{"event":"job.completed","job_id":"job_live_1"}`
	var id int64
	var outcome string
	if err := pool.QueryRow(ctx, `SELECT event_id, outcome FROM webhooks.ingest_signed('live', $1::jsonb, $2)`,
		testsign.JSON(testsign.Sume(secret, body, time.Now())), []byte(body)).Scan(&id, &outcome); err != nil {
		t.Fatalf("ingest_signed as %s: %v", role, err)
	}
	if outcome != "created" {
		t.Fatalf("outcome = %q, want created", outcome)
	}
	if n := queryInt(t, owner, `SELECT count(*) FROM webhooks.events WHERE id = $1 AND external_id = 'job_live_1'`, id); n != 1 {
		t.Fatalf("the event row is missing")
	}

	// A forged delivery: refused, nothing written.
	_, err = pool.Exec(ctx, `SELECT webhooks.ingest_signed('live', $1::jsonb, $2)`,
		testsign.JSON(testsign.Sume("guessed-secret", body, time.Now())), []byte(strings.Replace(body, "_1", "_2", 1)))
	wantPgError(t, err, "28000", "pginbox: signature mismatch")

	// A replay of an old delivery cannot be let in by turning the clock back.
	old := time.Now().Add(-time.Hour)
	oldBody := `{"event":"job.completed","job_id":"job_old"}`
	_, err = pool.Exec(ctx, `SELECT webhooks._ingest_signed_at('live', $1::jsonb, $2, $3)`,
		testsign.JSON(testsign.Sume(secret, oldBody, old)), []byte(oldBody), old)
	wantPgError(t, err, "42501", "permission denied")
	_, err = pool.Exec(ctx, `SELECT webhooks.ingest_signed('live', $1::jsonb, $2)`,
		testsign.JSON(testsign.Sume(secret, oldBody, old)), []byte(oldBody))
	wantPgError(t, err, "28000", "pginbox: timestamp out of tolerance")
	if n := queryInt(t, owner, `SELECT count(*) FROM webhooks.events WHERE provider = 'live'`); n != 1 {
		t.Fatalf("%d rows for provider live, want 1", n)
	}
	// The owner, who can read the secrets anyway, may.
	execSQL(t, owner, `SELECT webhooks._ingest_signed_at('live', $1::jsonb, $2, $3)`,
		testsign.JSON(testsign.Sume(secret, oldBody, old)), []byte(oldBody), old)
}

// TestSignedSecretsNeverInErrors checks set_provider's validation errors name
// secrets by position only, as verify.New does.
func TestSignedSecretsNeverInErrors(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	ctx := context.Background()
	const good = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	tests := []struct {
		name    string
		kind    string
		secrets []string
		code    string
		want    string
	}{
		{"unknown kind", "paypal", []string{"paypal-secret-value"}, "22023", `unknown provider kind "paypal"`},
		{"kind is case-sensitive", "Sume", []string{"sume-secret-value"}, "22023", "unknown provider kind"},
		{"no secrets", "sume", []string{}, "22023", "no secrets"},
		{"empty secret", "github", []string{"github-secret-value", ""}, "22023", "secret 2 of 2 is empty"},
		{"whsec not base64", "standardwebhooks", []string{"whsec_not*base64!secretvalue"}, "22023", "secret 1 of 1: not base64"},
		{"bare not base64", "standardwebhooks", []string{"%%%%secretvalue"}, "22023", "not base64"},
		{"base64 with a space", "standardwebhooks", []string{"whsec_MfKQ9r8GKYqr TwjUPD8ILPZIo2LaLaSw"}, "22023", "not base64"},
		{"whsec prefix only", "standardwebhooks", []string{"whsec_"}, "22023", "secret 1 of 1: empty"},
		{"second whsec bad", "standardwebhooks", []string{good, "whsec_???secretvalue"}, "22023", "secret 2 of 2"},
		{"whpk of 31 bytes", "standardwebhooks", []string{good, "whpk_" + base64.StdEncoding.EncodeToString(make([]byte, 31))}, "22023", "secret 2 of 2: not the base64 of a 32-byte Ed25519 public key"},
		{"whpk not base64", "standardwebhooks", []string{"whpk_!!publickeyvalue!!"}, "22023", "secret 1 of 1: not the base64 of a 32-byte"},
		{"whsk private key", "standardwebhooks", []string{"whsk_" + base64.StdEncoding.EncodeToString([]byte("a private signing key of 64 bytes, which is never configured!!!"))}, "22023", "configure its public key (whpk_)"},
	}
	for _, tt := range tests {
		_, err := pool.Exec(ctx, `SELECT webhooks.set_provider('p', $1, $2)`, tt.kind, tt.secrets)
		wantPgError(t, err, tt.code, tt.want)
		var pgErr *pgconn.PgError
		errors.As(err, &pgErr)
		text := strings.Join([]string{pgErr.Message, pgErr.Detail, pgErr.Hint, pgErr.Where}, "\n")
		for _, s := range tt.secrets {
			if s = strings.TrimPrefix(s, "whsec_"); len(s) > 3 && strings.Contains(text, s) {
				t.Errorf("%s: error %q leaks a secret", tt.name, text)
			}
		}
		// The Go runner refuses the same secrets.
		if _, err := verify.New(tt.kind, tt.secrets); err == nil {
			t.Errorf("%s: verify.New accepts what set_provider refuses", tt.name)
		}
	}
	_, err := pool.Exec(ctx, `SELECT webhooks.set_provider('p', 'sume', ARRAY['sume-secret', NULL])`)
	wantPgError(t, err, "22004", "secret 2 of 2 is null")
	_, err = pool.Exec(ctx, `SELECT webhooks.set_provider('p', 'sume', NULL)`)
	wantPgError(t, err, "22023", "no secrets")
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.provider_secrets`); n != 0 {
		t.Fatalf("%d secrets stored by refused calls", n)
	}

	// Accepted: an unprefixed, an unpadded and a padded Standard Webhooks
	// secret; a secret listed twice is stored once.
	// A whpk_ public key (padded or not) is accepted beside them.
	pub := "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
	execSQL(t, pool, `SELECT webhooks.set_provider('p', 'standardwebhooks', $1)`,
		[]string{good, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_c2VjcmV0Cg", "whsec_c2VjcmV0Cg==", good, pub, strings.TrimRight(pub, "=")})
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.provider_secrets WHERE provider = 'p' AND kind = 'standardwebhooks'`); n != 6 {
		t.Fatalf("%d secrets stored, want 6", n)
	}
}

// TestSignedProviders covers set_provider's replace semantics, rotation,
// drop_provider, unknown providers, duplicates and the headers argument.
func TestSignedProviders(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	ctx := context.Background()
	const oldSecret, newSecret = "rotation-secret-old-1a", "rotation-secret-new-2b"
	body := `{"event":"job.completed","job_id":"job_rot"}`
	ingestAs := func(secret string) (string, error) {
		var outcome string
		err := pool.QueryRow(ctx, `SELECT outcome FROM webhooks.ingest_signed('rot', $1::jsonb, $2)`,
			testsign.JSON(testsign.Sume(secret, body, time.Now())), []byte(body)).Scan(&outcome)
		return outcome, err
	}

	_, err := ingestAs(oldSecret)
	wantPgError(t, err, "42704", `pginbox: unknown provider "rot"`)

	execSQL(t, pool, `SELECT webhooks.set_provider('rot', 'sume', ARRAY[$1::text])`, oldSecret)
	if outcome, err := ingestAs(oldSecret); err != nil || outcome != "created" {
		t.Fatalf("first delivery: %q, %v", outcome, err)
	}
	if outcome, err := ingestAs(oldSecret); err != nil || outcome != "duplicate" {
		t.Fatalf("redelivery: %q, %v, want duplicate", outcome, err)
	}
	_, err = ingestAs(newSecret)
	wantPgError(t, err, "28000", "pginbox: signature mismatch")

	// Rotation: both secrets, then only the new one.
	execSQL(t, pool, `SELECT webhooks.set_provider('rot', 'sume', ARRAY[$1::text, $2::text])`, newSecret, oldSecret)
	for _, s := range []string{oldSecret, newSecret} {
		if outcome, err := ingestAs(s); err != nil || outcome != "duplicate" {
			t.Fatalf("during rotation: %q, %v", outcome, err)
		}
	}
	created := queryInt(t, pool, `SELECT count(*) FROM webhooks.provider_secrets WHERE provider = 'rot'`)
	execSQL(t, pool, `SELECT webhooks.set_provider('rot', 'sume', ARRAY[$1::text])`, newSecret)
	_, err = ingestAs(oldSecret)
	wantPgError(t, err, "28000", "pginbox: signature mismatch")
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.provider_secrets WHERE provider = 'rot'`); created != 2 || n != 1 {
		t.Fatalf("secrets during rotation %d, after %d; want 2 then 1", created, n)
	}

	// Changing the kind replaces it on every row.
	execSQL(t, pool, `SELECT webhooks.set_provider('rot', 'github', ARRAY[$1::text])`, newSecret)
	_, err = ingestAs(newSecret)
	wantPgError(t, err, "28000", "pginbox: signature missing")

	var dropped bool
	if err := pool.QueryRow(ctx, `SELECT webhooks.drop_provider('rot')`).Scan(&dropped); err != nil || !dropped {
		t.Fatalf("drop_provider = %v, %v", dropped, err)
	}
	if err := pool.QueryRow(ctx, `SELECT webhooks.drop_provider('rot')`).Scan(&dropped); err != nil || dropped {
		t.Fatalf("second drop_provider = %v, %v", dropped, err)
	}
	_, err = ingestAs(newSecret)
	wantPgError(t, err, "42704", "unknown provider")
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'rot'`); n != 1 {
		t.Fatalf("%d events, want the one stored before the drop", n)
	}

	// Arguments that are not a delivery at all.
	execSQL(t, pool, `SELECT webhooks.set_provider('args', 'sume', ARRAY['args-secret'])`)
	for _, tt := range []struct {
		sql, code, want string
	}{
		{`SELECT webhooks.ingest_signed(NULL, '{}', ''::bytea)`, "22004", "provider must not be null"},
		{`SELECT webhooks.ingest_signed('args', NULL, ''::bytea)`, "22004", "headers must not be null"},
		{`SELECT webhooks.ingest_signed('args', '{}', NULL)`, "22004", "body must not be null"},
		{`SELECT webhooks.ingest_signed('args', '[]', ''::bytea)`, "22023", "headers must be a JSON object"},
		{`SELECT webhooks.ingest_signed('args', '{"X-Sume-Timestamp": 1700000000}', ''::bytea)`, "22023", `header "X-Sume-Timestamp" must be a string or an array of strings, got number`},
		{`SELECT webhooks.ingest_signed('args', '{"X-Sume-Signature": ["a", 1]}', ''::bytea)`, "22023", "an array holding a non-string"},
		{`SELECT webhooks._ingest_signed_at('args', '{}', ''::bytea, 'infinity')`, "22023", "at must be a finite timestamp"},
		{`SELECT webhooks.ingest_signed('args', '{}', ''::bytea)`, "28000", "pginbox: signature missing"},
	} {
		_, err := pool.Exec(ctx, tt.sql)
		wantPgError(t, err, tt.code, tt.want)
	}
}

// TestSignatureVectorsMutated derives a few hundred deliveries from the
// accepted vectors by random edits (fixed seed: the same cases on every run)
// to headers, header-name case, the body and the clock, and requires the Go
// and SQL verifiers to give the same verdict on each.
func TestSignatureVectorsMutated(t *testing.T) {
	t.Parallel()
	bases := map[string][]signatureVector{} // kind -> accepted vectors
	for _, v := range loadVectors(t) {
		if v.Want.Status == 0 && v.GoDiffers == "" && len(v.Body) < 1000 {
			bases[v.Kind] = append(bases[v.Kind], v)
		}
	}
	kinds := verify.Kinds()
	rng := mrand.New(mrand.NewPCG(7, 4231))
	tokens := []string{" ", ",", "=", "\t", "\u00a0", "\u2003", "v1=", "v1,", "t=", "0", "a", "Z", "+", "/",
		"\r\n", "==", "sha256=", ".", "-", "1", "v1a,", ""}
	mutateString := func(s string) string {
		r := []rune(s)
		switch rng.IntN(6) {
		case 0:
			if len(r) > 0 {
				i := rng.IntN(len(r))
				r = append(r[:i:i], r[i+1:]...)
			}
		case 1:
			i := rng.IntN(len(r) + 1)
			r = append(r[:i:i], append([]rune(tokens[rng.IntN(len(tokens))]), r[i:]...)...)
		case 2:
			if len(r) > 0 {
				i := rng.IntN(len(r))
				r = append(r[:i:i], append([]rune(tokens[rng.IntN(len(tokens))]), r[i+1:]...)...)
			}
		case 3:
			return strings.ToUpper(s)
		case 4:
			return tokens[rng.IntN(len(tokens))] + s + tokens[rng.IntN(len(tokens))]
		case 5:
			if len(r) > 1 {
				return string(r[:rng.IntN(len(r))])
			}
		}
		return string(r)
	}
	var cases []signatureVector
	for n := 0; n < 500; n++ {
		of := bases[kinds[n%len(kinds)]]
		v := of[rng.IntN(len(of))]
		var h map[string]any
		if err := json.Unmarshal(v.Headers, &h); err != nil {
			t.Fatal(err)
		}
		names := make([]string, 0, len(h))
		for name := range h {
			names = append(names, name)
		}
		slices.Sort(names)
		for edits := 1 + rng.IntN(3); edits > 0; edits-- {
			name := names[rng.IntN(len(names))]
			s, isString := h[name].(string)
			switch op := rng.IntN(10); {
			case !isString:
			case op < 6:
				h[name] = mutateString(s)
			case op == 6:
				h[name] = []string{s, mutateString(s)}
			case op == 7:
				h[name] = []string{mutateString(s), s}
			case op == 8:
				delete(h, name)
				names = slices.DeleteFunc(names, func(x string) bool { return x == name })
			case op == 9:
				delete(h, name)
				flipped := []byte(name)
				for i := range flipped {
					if rng.IntN(2) == 0 && flipped[i] >= 'a' && flipped[i] <= 'z' {
						flipped[i] -= 'a' - 'A'
					}
				}
				h[string(flipped)] = s
				names = slices.DeleteFunc(names, func(x string) bool { return x == name })
				names = append(names, string(flipped))
			}
			if len(names) == 0 {
				break
			}
		}
		switch rng.IntN(4) {
		case 0:
			v.Body = mutateString(v.Body)
		case 1:
			v.At += int64(rng.IntN(800)) - 400
		}
		var err error
		if v.Headers, err = json.Marshal(h); err != nil {
			t.Fatal(err)
		}
		v.Name = fmt.Sprintf("%03d %s", n, v.Name)
		cases = append(cases, v)
	}

	db := newSignedDB(t)
	verdicts := map[string]int{}
	var mu sync.Mutex
	t.Run("cases", func(t *testing.T) {
		for i, v := range cases {
			t.Run(v.Name, func(t *testing.T) {
				t.Parallel()
				goGot := goVerdict(t, v)
				sqlGot, _ := sqlVerdict(t, db.pool, "mut"+strconv.Itoa(i), v)
				if goGot != sqlGot {
					t.Errorf("Go %v, SQL %v\nheaders %s\nbody %q at %d", goGot, sqlGot, v.Headers, v.Body, v.At)
				}
				mu.Lock()
				verdicts[sqlGot.Reason]++
				mu.Unlock()
			})
		}
	})
	t.Logf("verdicts of %d mutated deliveries (\"\" = accepted): %v", len(cases), verdicts)
}

// TestSignatureVectorsIdentifyMutated compares key and event-type extraction
// alone (runner Identify against webhooks._identify) on bodies and id headers
// mangled at random (fixed seed), where a signature would otherwise stop most
// of them first.
func TestSignatureVectorsIdentifyMutated(t *testing.T) {
	t.Parallel()
	vectors := loadVectors(t)
	rng := mrand.New(mrand.NewPCG(11, 2104))
	tokens := []string{`"`, `{`, `}`, `[`, `]`, `:`, `,`, ` `, "\n", `null`, `true`, `1e3`, `-0`, `1.5`, `17`,
		`"id"`, `"id":`, `"job_id":`, `"request_id":`, `"event":`, `"type":`, `"action":`, `"x"`, `""`, `"  "`,
		`\u0000`, `\ud800`, `\u00e9`, `\u0007`, `\"`, `\\`, "\u00a0", "\xff", `9007199254740993`, `{"id":"n"}`}
	mangle := func(s string) string {
		for edits := 1 + rng.IntN(3); edits > 0; edits-- {
			i := rng.IntN(len(s) + 1)
			tok := tokens[rng.IntN(len(tokens))]
			switch rng.IntN(3) {
			case 0: // insert
				s = s[:i] + tok + s[i:]
			case 1: // replace a byte
				if i < len(s) {
					s = s[:i] + tok + s[i+1:]
				}
			case 2: // cut a byte
				if i < len(s) {
					s = s[:i] + s[i+1:]
				}
			}
		}
		return s
	}
	idHeaders := map[string]string{"sume": "X-Sume-Event-Id", "github": "X-GitHub-Delivery",
		"standardwebhooks": "webhook-id", "shopify": "X-Shopify-Event-Id"}
	type identifyCase struct {
		name, kind string
		headers    http.Header
		body       []byte
	}
	var cases []identifyCase
	for n := 0; n < 1500; n++ {
		v := vectors[rng.IntN(len(vectors))]
		if len(v.Body) > 1000 || v.GoDiffers != "" {
			continue
		}
		h := v.httpHeader(t)
		body := v.Body
		if rng.IntN(4) > 0 {
			body = mangle(body)
		}
		if name, ok := idHeaders[v.Kind]; ok && rng.IntN(3) == 0 {
			switch rng.IntN(3) {
			case 0:
				// jsonb holds only valid UTF-8: a header that is not never reaches SQL as is.
				if m := mangle(h.Get(name)); utf8.ValidString(m) {
					h.Set(name, m)
				}
			case 1:
				h.Del(name)
			case 2:
				h.Set(name, []string{"evt_1", "17", "-0", "job_1", " ", "req_1"}[rng.IntN(6)])
			}
		}
		cases = append(cases, identifyCase{fmt.Sprintf("%04d %s", n, v.Name), v.Kind, h, []byte(body)})
	}

	pool := PoolFor(t, NewConfig(t).URL(), 10)
	verdicts := map[string]int{}
	var mu sync.Mutex
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				var goGot verdict
				p, err := verify.NewWithURL(c.kind, []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, squareURL)
				if err != nil {
					t.Fatal(err)
				}
				d, err := p.Identify(c.headers, c.body)
				var rej *verify.RejectError
				switch {
				case errors.As(err, &rej):
					goGot = verdict{Status: rej.Status, Reason: rej.Reason}
				case err != nil:
					t.Fatal(err)
				default:
					goGot = verdict{ExternalID: d.ExternalID, EventType: d.EventType}
				}
				headers := map[string][]string(c.headers)
				hj, err := json.Marshal(headers)
				if err != nil {
					t.Fatal(err)
				}
				var sqlGot verdict
				var id, typ, reason *string
				if err := pool.QueryRow(context.Background(),
					`SELECT external_id, event_type, reason FROM webhooks._identify($1, webhooks._http_headers($2::jsonb), $3)`,
					c.kind, string(hj), c.body).Scan(&id, &typ, &reason); err != nil {
					t.Fatalf("_identify: %v", err)
				}
				if reason != nil {
					sqlGot = verdict{Status: http.StatusBadRequest, Reason: *reason}
				} else if id != nil && typ != nil {
					sqlGot = verdict{ExternalID: *id, EventType: *typ}
				}
				if goGot != sqlGot {
					t.Errorf("Go %v, SQL %v\nheaders %s\nbody %q", goGot, sqlGot, hj, c.body)
				}
				mu.Lock()
				verdicts[sqlGot.Reason]++
				mu.Unlock()
			})
		}
	})
	t.Logf("verdicts of %d mangled bodies (\"\" = accepted): %v", len(cases), verdicts)
}
