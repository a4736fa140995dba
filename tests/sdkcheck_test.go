package tests

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner"
)

// The providers' official libraries, at the exact versions of
// tests/sdkcheck/package.json (and its lock file), judge deliveries signed
// by pginbox's test signer, and pginbox judges what those libraries'
// runtimes sign: pginbox is checked against the providers' code, not only
// against our reading of their documentation.

var (
	sdkOnce sync.Once
	sdkErr  error
)

// sdkNode returns the node binary with tests/sdkcheck's locked libraries
// installed (npm ci once, when missing), or skips t.
func sdkNode(t *testing.T) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs("sdkcheck")
	if err != nil {
		t.Fatal(err)
	}
	node, errNode := exec.LookPath("node")
	_, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if err := aptInstall("nodejs", "npm"); err != nil {
			t.Skipf("tests/sdkcheck needs node and npm: not on PATH, and installing them failed: %v", err)
		}
		if node, errNode = exec.LookPath("node"); errNode != nil {
			t.Skipf("tests/sdkcheck needs node: %v", errNode)
		}
	}
	sdkOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@paddle", "paddle-node-sdk", "package.json")); err == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "npm", "ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error").CombinedOutput()
		if err != nil {
			sdkErr = fmt.Errorf("%v: %s", err, lastLines(out, 10))
		}
	})
	if sdkErr != nil {
		t.Skipf("tests/sdkcheck: npm ci failed (is the npm registry reachable?): %v", sdkErr)
	}
	return node, dir
}

// runNode runs one of tests/sdkcheck's scripts with in as JSON on stdin and
// decodes its JSON answer into out.
func runNode(t *testing.T, node, dir, script string, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, script))
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(string(b))
	res, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node %s: %v: %s", script, err, lastLines(stderr, 10))
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("node %s answered %q: %v", script, res, err)
	}
}

// ingestSigned runs webhooks.ingest_signed (the clock is now()) and returns
// its outcome or the SQLSTATE and message of its refusal.
func ingestSigned(t *testing.T, pool *pgxpool.Pool, provider string, h http.Header, body string) string {
	t.Helper()
	var id int64
	var outcome string
	err := pool.QueryRow(context.Background(), `SELECT event_id, outcome FROM webhooks.ingest_signed($1, $2::jsonb, $3)`,
		provider, testsign.JSON(h), []byte(body)).Scan(&id, &outcome)
	if err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			t.Fatalf("ingest_signed: %v", err)
		}
		return pgErr.Code + " " + pgErr.Message
	}
	return outcome
}

// TestPaddleOfficialSDK: one Paddle delivery signed by hand from Paddle's
// recipe (ts=<now>;h1=hex HMAC-SHA256(secret, "<ts>:<body>")) is accepted
// by Paddle's own Node.js SDK (@paddle/paddle-node-sdk: isSignatureValid and
// unmarshal, which reads event_id and event_type), by the runner over HTTP
// and by webhooks.ingest_signed; the same delivery with its body altered,
// or checked with another secret, is refused by all three.
func TestPaddleOfficialSDK(t *testing.T) {
	t.Parallel()
	node, dir := sdkNode(t)
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	const secret = "pdl_ntfset_01hv8sdkcheck_5b7d0c9e1a"
	srv := startServer(t, conf.URL(), runner.Config{}, map[string][2]string{"pay": {"paddle", "pdl_ntfset_01hv8previous_0000," + secret}})
	execSQL(t, pool, `SELECT webhooks.set_provider('pay', 'paddle', $1)`, []string{secret})
	client := &http.Client{Timeout: 10 * time.Second}

	// A customer.created delivery as Paddle documents it (unmarshal builds the
	// SDK's typed entity from data).
	body := `{"event_id":"evt_01h8441jx8x1q971q9ksksqh82","event_type":"customer.created","occurred_at":"2023-08-18T11:25:03.465930Z","notification_id":"ntf_01h8441k2c8bsw1a4ayrsms8kp","data":{"id":"ctm_01h8441jn5pcwrfhwh78jqt8hk","name":null,"email":"test@example.com","locale":"en","status":"active","created_at":"2023-08-18T11:25:03.189Z","updated_at":"2023-08-18T11:25:03.189Z","custom_data":null,"import_meta":null,"marketing_consent":false}}`
	tampered := strings.Replace(body, "test@example.com", "mallory@example.com", 1)
	// The SDK refuses a signature more than 5 seconds old (and never one
	// from the future), and starting node on a loaded machine can take
	// longer: the delivery is signed 20 seconds ahead (pginbox allows 5
	// minutes either way).
	h := testsign.Paddle(secret, body, time.Now().Add(20*time.Second))
	type sdkAnswer struct {
		IsSignatureValid bool `json:"isSignatureValid"`
		Unmarshal        struct {
			OK        bool   `json:"ok"`
			EventID   string `json:"eventId"`
			EventType string `json:"eventType"`
		} `json:"unmarshal"`
	}
	var good, bad, wrong sdkAnswer
	runNode(t, node, dir, "paddle.js", map[string]string{"secret": secret, "body": body, "header": h.Get("Paddle-Signature")}, &good)
	runNode(t, node, dir, "paddle.js", map[string]string{"secret": secret, "body": tampered, "header": h.Get("Paddle-Signature")}, &bad)
	runNode(t, node, dir, "paddle.js", map[string]string{"secret": "pdl_ntfset_01hv8other_secret", "body": body, "header": h.Get("Paddle-Signature")}, &wrong)
	if !good.IsSignatureValid || !good.Unmarshal.OK || good.Unmarshal.EventID != "evt_01h8441jx8x1q971q9ksksqh82" || good.Unmarshal.EventType != "customer.created" {
		t.Fatalf("Paddle's SDK on the signed delivery: %+v", good)
	}
	if bad.IsSignatureValid || bad.Unmarshal.OK || wrong.IsSignatureValid || wrong.Unmarshal.OK {
		t.Fatalf("Paddle's SDK accepted a tampered body (%+v) or another secret (%+v)", bad, wrong)
	}

	if status, out := post(t, client, srv.Base+"/webhooks/pay", h, []byte(body)); status != 200 || out["outcome"] != "created" {
		t.Fatalf("runner: %d %v", status, out)
	}
	if status, out := post(t, client, srv.Base+"/webhooks/pay", h, []byte(tampered)); status != 401 || out["error"] != "signature mismatch" {
		t.Fatalf("runner, tampered: %d %v", status, out)
	}
	execSQL(t, pool, `DELETE FROM webhooks.events`)
	if got := ingestSigned(t, pool, "pay", h, body); got != "created" {
		t.Fatalf("ingest_signed: %s", got)
	}
	if got := ingestSigned(t, pool, "pay", h, tampered); got != "28000 pginbox: signature mismatch" {
		t.Fatalf("ingest_signed, tampered: %s", got)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'pay' AND external_id = 'evt_01h8441jx8x1q971q9ksksqh82'
		AND event_type = 'customer.created'`); n != 1 {
		t.Fatalf("%d rows, want the one delivery", n)
	}
}

// TestStandardWebhooksV1aNodeCrypto: node:crypto's Ed25519 reproduces RFC
// 8032's test 1 (key and signature), signs a v1a delivery that the runner
// over HTTP and webhooks.ingest_signed accept with its whpk_ public key
// (beside a whsec_ secret) and refuse once the body is altered; and it
// verifies a v1a signature made by pginbox's test signer (Go's
// crypto/ed25519). The standardwebhooks npm package (1.1.1) has no v1a, so
// node:crypto is the reference.
func TestStandardWebhooksV1aNodeCrypto(t *testing.T) {
	t.Parallel()
	node, dir := sdkNode(t)
	type edAnswer struct {
		Public    string `json:"public_b64"`
		Signature string `json:"signature_b64"`
		Verifies  *bool  `json:"verifies"`
	}
	const seed1 = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	var rfc edAnswer
	runNode(t, node, dir, "ed25519.js", map[string]string{"seed_hex": seed1, "msg_b64": ""}, &rfc)
	pubHex, sigHex := hexOf(t, rfc.Public), hexOf(t, rfc.Signature)
	if pubHex != "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a" ||
		sigHex != "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b" {
		t.Fatalf("node:crypto does not reproduce RFC 8032 test 1: %s %s", pubHex, sigHex)
	}

	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	const seed = "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7" // RFC 8032 test 3
	var signer edAnswer
	runNode(t, node, dir, "ed25519.js", map[string]string{"seed_hex": seed, "msg_b64": ""}, &signer)
	whpk := "whpk_" + signer.Public
	const whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	srv := startServer(t, conf.URL(), runner.Config{}, map[string][2]string{"clerk": {"standardwebhooks", whsec + "," + whpk}})
	execSQL(t, pool, `SELECT webhooks.set_provider('clerk', 'standardwebhooks', $1)`, []string{whsec, whpk})
	client := &http.Client{Timeout: 10 * time.Second}

	const id = "msg_2nv1aNodeCryptoSigned"
	body := `{"type":"user.created","data":{"id":"user_29w83sxmDNGwOuEthce5gg56FcC"}}`
	tsS := fmt.Sprint(time.Now().Unix())
	var signed edAnswer
	runNode(t, node, dir, "ed25519.js", map[string]string{"seed_hex": seed, "msg_b64": base64.StdEncoding.EncodeToString([]byte(id + "." + tsS + "." + body))}, &signed)
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", tsS)
	h.Set("webhook-signature", "v1a,"+signed.Signature)
	tampered := strings.Replace(body, "user_29w", "user_30w", 1)
	if status, out := post(t, client, srv.Base+"/webhooks/clerk", h, []byte(body)); status != 200 || out["outcome"] != "created" {
		t.Fatalf("runner: %d %v", status, out)
	}
	if status, out := post(t, client, srv.Base+"/webhooks/clerk", h, []byte(tampered)); status != 401 || out["error"] != "signature mismatch" {
		t.Fatalf("runner, tampered: %d %v", status, out)
	}
	execSQL(t, pool, `DELETE FROM webhooks.events`)
	if got := ingestSigned(t, pool, "clerk", h, body); got != "created" {
		t.Fatalf("ingest_signed: %s", got)
	}
	if got := ingestSigned(t, pool, "clerk", h, tampered); got != "28000 pginbox: signature mismatch" {
		t.Fatalf("ingest_signed, tampered: %s", got)
	}

	// The other way: what Go's crypto/ed25519 signs, node:crypto verifies.
	seedBytes, _ := hex.DecodeString(seed)
	goSigned := testsign.StandardWebhooksV1a(ed25519.NewKeyFromSeed(seedBytes), id, body, time.Unix(1_700_000_000, 0))
	msg := base64.StdEncoding.EncodeToString([]byte(id + ".1700000000." + body))
	msgTampered := base64.StdEncoding.EncodeToString([]byte(id + ".1700000000." + tampered))
	goSig := strings.TrimPrefix(goSigned.Get("webhook-signature"), "v1a,")
	var ok1, ok2 edAnswer
	runNode(t, node, dir, "ed25519.js", map[string]string{"seed_hex": seed, "msg_b64": msg, "sig_b64": goSig}, &ok1)
	runNode(t, node, dir, "ed25519.js", map[string]string{"seed_hex": seed, "msg_b64": msgTampered, "sig_b64": goSig}, &ok2)
	if ok1.Verifies == nil || !*ok1.Verifies || ok2.Verifies == nil || *ok2.Verifies {
		t.Fatalf("node:crypto on Go's v1a signature: %v, on a tampered body: %v", ok1.Verifies, ok2.Verifies)
	}
}

func hexOf(t *testing.T, b64 string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
