package tests

// The programs under examples/ run here against a fresh test database each,
// so they cannot rot: the Node.js receiver, the Python worker, the psql
// walk-through, and embedding the Go runner with a runner.Handler. Each test
// finds (or, as root with apt-get, installs) the tools it needs and skips
// with a message naming what is missing when that fails.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
	"github.com/pginbox/pginbox/runner/verify"
)

// examplesDir is examples/ at the root of the module (tests run in tests/).
func examplesDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("examples folder: %v", err)
	}
	return dir
}

// syncBuffer collects a subprocess's output for the test log.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// aptInstall installs Debian packages when this process may (root, apt-get
// present): the project's files must install what its tests need on a new
// machine. One install at a time, each attempted once per test binary.
var (
	aptMu   sync.Mutex
	aptDone = map[string]error{}
)

func aptInstall(pkgs ...string) error {
	aptMu.Lock()
	defer aptMu.Unlock()
	key := strings.Join(pkgs, " ")
	if err, ok := aptDone[key]; ok {
		return err
	}
	err := func() error {
		if os.Geteuid() != 0 {
			return errors.New("not root, so no apt-get install")
		}
		if _, err := exec.LookPath("apt-get"); err != nil {
			return errors.New("no apt-get")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		run := func(args ...string) error {
			cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-o", "DPkg::Lock::Timeout=300"}, args...)...)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("apt-get %s: %v: %s", strings.Join(args, " "), err, lastLines(out, 5))
			}
			return nil
		}
		install := append([]string{"install", "-y", "-qq", "--no-install-recommends"}, pkgs...)
		if err := run(install...); err == nil {
			return nil
		}
		if err := run("update", "-qq"); err != nil {
			return err
		}
		return run(install...)
	}()
	aptDone[key] = err
	return err
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// needNode returns the node binary with the receiver's dependencies
// installed (npm ci when node_modules is missing), or skips t.
func needNode(t *testing.T) string {
	t.Helper()
	node, errNode := exec.LookPath("node")
	_, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if err := aptInstall("nodejs", "npm"); err != nil {
			t.Skipf("examples/node-receiver needs node and npm: not on PATH, and installing them failed: %v", err)
		}
		if node, errNode = exec.LookPath("node"); errNode != nil {
			t.Skipf("examples/node-receiver needs node: %v", errNode)
		}
	}
	if err := npmCI(filepath.Join(examplesDir(t), "node-receiver")); err != nil {
		t.Skipf("examples/node-receiver: npm ci failed (is the npm registry reachable?): %v", err)
	}
	return node
}

var (
	npmOnce sync.Once
	npmErr  error
)

// npmCI installs the receiver's locked dependencies once, when missing.
func npmCI(dir string) error {
	npmOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "pg", "package.json")); err == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error")
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = fmt.Errorf("%v: %s", err, lastLines(out, 10))
		}
	})
	return npmErr
}

// pythonWithPsycopg2 is Debian's interpreter, which sees Debian's
// python3-psycopg2 (a pyenv python3 earlier on PATH would not).
const pythonWithPsycopg2 = "/usr/bin/python3"

// needPython returns a python3 that can import psycopg2, or skips t.
func needPython(t *testing.T) string {
	t.Helper()
	works := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, pythonWithPsycopg2, "-c", "import psycopg2").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s -c 'import psycopg2': %v: %s", pythonWithPsycopg2, err, lastLines(out, 2))
		}
		return nil
	}
	if err := works(); err != nil {
		if ierr := aptInstall("python3", "python3-psycopg2"); ierr != nil {
			t.Skipf("examples/python-worker needs Debian's python3-psycopg2: %v; installing it failed: %v", err, ierr)
		}
		if err := works(); err != nil {
			t.Skipf("examples/python-worker needs Debian's python3-psycopg2: %v", err)
		}
	}
	return pythonWithPsycopg2
}

// needPsql returns the psql client from PATH or the newest
// /usr/lib/postgresql/*/bin, or skips t.
func needPsql(t *testing.T) string {
	t.Helper()
	find := func() string {
		if p, err := exec.LookPath("psql"); err == nil {
			return p
		}
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql")
		sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
		if len(dirs) > 0 {
			return dirs[0]
		}
		return ""
	}
	if p := find(); p != "" {
		return p
	}
	if err := aptInstall("postgresql-client"); err != nil {
		t.Skipf("examples/psql needs psql: not on PATH nor under /usr/lib/postgresql/*/bin, and installing it failed: %v", err)
	}
	if p := find(); p != "" {
		return p
	}
	t.Skip("examples/psql needs psql: not found after installing postgresql-client")
	return ""
}

func pgMajor(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

// startProcess starts cmd bounded by timeout: SIGTERM when the test ends (or
// the timeout passes), SIGKILL 5 s later. Its stderr goes to the returned
// buffer, logged when the test ends; stdout is the caller's.
func startProcess(t *testing.T, timeout time.Duration, name string, args ...string) (*exec.Cmd, *syncBuffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	var once sync.Once
	var waitErr error
	wait := func() error {
		once.Do(func() { waitErr = cmd.Wait(); cancel() })
		return waitErr
	}
	t.Cleanup(func() {
		cancel()
		_ = wait()
		if s := strings.TrimSpace(stderr.String()); s != "" {
			t.Logf("%s stderr:\n%s", filepath.Base(name), s)
		}
	})
	return cmd, stderr, wait
}

// startNodeReceiver runs examples/node-receiver on a free loopback port
// (PORT=0, the port it prints) and returns its base URL.
func startNodeReceiver(t *testing.T, node, databaseURL, secrets string) string {
	t.Helper()
	dir := filepath.Join(examplesDir(t), "node-receiver")
	cmd, _, wait := startProcess(t, 3*time.Minute, node, filepath.Join(dir, "receiver.js"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DATABASE_URL="+databaseURL, "SUME_SECRET="+secrets, "PORT=0", "HOST=127.0.0.1")
	stdout := &syncBuffer{}
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node receiver: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = wait(); close(exited) }()
	re := regexp.MustCompile(`(?m)^listening on (http://\S+)$`)
	deadline := time.After(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			return m[1]
		}
		select {
		case <-exited:
			t.Fatalf("node receiver exited before listening: %s", stdout.String())
		case <-deadline:
			t.Fatal("node receiver did not start listening within 30s")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestExampleNodeReceiver: the Node.js receiver verifies Sume signatures on
// the raw body, keys deliveries as the provider table documents, and stores them with
// ingest_webhook(); rejected deliveries write nothing.
func TestExampleNodeReceiver(t *testing.T) {
	t.Parallel()
	node := needNode(t)
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	base := startNodeReceiver(t, node, conf.URL(), "sume-old-secret-0123, sume-new-secret-0123")
	url := base + "/webhooks/sume"
	client := &http.Client{Timeout: 15 * time.Second}
	now := time.Now()

	type delivery struct {
		name    string
		secret  string
		at      time.Time
		body    string
		header  http.Header // added to the signature headers
		status  int
		outcome string // for 200
		reason  string // for errors
		key     string // the external_id the row gets
	}
	job1 := `{"job_id": "job_1", "event": "job.completed", "status": "COMPLETED"}`
	cases := []delivery{
		{name: "first delivery", secret: "sume-new-secret-0123", at: now, body: job1, status: 200, outcome: "created", key: "job_1"},
		{name: "redelivery", secret: "sume-new-secret-0123", at: now, body: job1, status: 200, outcome: "duplicate", key: "job_1"},
		{name: "corrected payload under the old secret", secret: "sume-old-secret-0123", at: now,
			body: `{"job_id": "job_1", "event": "job.completed", "status": "COMPLETED", "v": 2}`, status: 200, outcome: "updated", key: "job_1"},
		{name: "format run keyed on the envelope request_id", secret: "sume-new-secret-0123", at: now,
			body:   `{"request_id": "req_9", "event": "format.completed", "payload": {"request_id": "nested_9"}}`,
			status: 200, outcome: "created", key: "req_9"},
		{name: "resource event with a matching header", secret: "sume-new-secret-0123", at: now,
			body: `{"id": "evt_1", "type": "file.created"}`, header: http.Header{"X-Sume-Event-Id": {"evt_1"}},
			status: 200, outcome: "created", key: "evt_1"},
		{name: "integer id", secret: "sume-new-secret-0123", at: now, body: `{"id": 42, "type": "file.deleted"}`,
			status: 200, outcome: "created", key: "42"},
		{name: "key from the header alone", secret: "sume-new-secret-0123", at: now, body: `{"type": "ping"}`,
			header: http.Header{"X-Sume-Event-Id": {"evt_h"}}, status: 200, outcome: "created", key: "evt_h"},
		{name: "signed two minutes ahead", secret: "sume-old-secret-0123", at: now.Add(2 * time.Minute),
			body: `{"job_id": "job_2", "event": "job.failed"}`, status: 200, outcome: "created", key: "job_2"},

		{name: "forged", secret: "not-the-secret", at: now, body: `{"job_id": "job_forged", "event": "job.completed"}`,
			status: 401, reason: "signature mismatch"},
		{name: "expired", secret: "sume-new-secret-0123", at: now.Add(-10 * time.Minute), body: `{"job_id": "job_old", "event": "job.completed"}`,
			status: 401, reason: "timestamp out of tolerance"},
		{name: "from the future", secret: "sume-new-secret-0123", at: now.Add(10 * time.Minute), body: `{"job_id": "job_future", "event": "job.completed"}`,
			status: 401, reason: "timestamp out of tolerance"},
		{name: "bad json", secret: "sume-new-secret-0123", at: now, body: `{"job_id": "job_bad", "event": `, status: 400, reason: "body not json"},
		{name: "json array", secret: "sume-new-secret-0123", at: now, body: `[{"job_id": "job_arr"}]`, status: 400, reason: "body not json"},
		{name: "a NUL jsonb refuses", secret: "sume-new-secret-0123", at: now, body: `{"job_id": "job_nul", "event": "x", "note": "a\u0000b"}`,
			status: 400, reason: "body not json"},
		{name: "no key", secret: "sume-new-secret-0123", at: now, body: `{"event": "job.completed"}`, status: 400, reason: "idempotency key missing"},
		{name: "header disagrees with the body id", secret: "sume-new-secret-0123", at: now, body: `{"id": "evt_2", "type": "file.created"}`,
			header: http.Header{"X-Sume-Event-Id": {"evt_other"}}, status: 400, reason: "event id mismatch"},
		{name: "no event type", secret: "sume-new-secret-0123", at: now, body: `{"job_id": "job_untyped"}`, status: 400, reason: "event type missing"},
	}
	ids := map[string]float64{}
	for _, c := range cases {
		h := signSume(c.secret, c.body, c.at)
		for k, v := range c.header {
			h[k] = v
		}
		status, out := post(t, client, url, h, []byte(c.body))
		if status != c.status {
			t.Errorf("%s: status %d %v, want %d", c.name, status, out, c.status)
			continue
		}
		if c.status != 200 {
			if out["error"] != c.reason {
				t.Errorf("%s: error %v, want %q", c.name, out["error"], c.reason)
			}
			continue
		}
		if out["outcome"] != c.outcome {
			t.Errorf("%s: outcome %v, want %s", c.name, out["outcome"], c.outcome)
		}
		id, _ := out["event_id"].(float64)
		if prev, ok := ids[c.key]; ok && prev != id {
			t.Errorf("%s: event_id %v, the first delivery of %s got %v", c.name, id, c.key, prev)
		}
		ids[c.key] = id
		var stored string
		if err := pool.QueryRow(context.Background(),
			`SELECT external_id FROM webhooks.events WHERE id = $1 AND provider = 'sume'`, int64(id)).Scan(&stored); err != nil || stored != c.key {
			t.Errorf("%s: event %v has external_id %q (%v), want %q", c.name, id, stored, err, c.key)
		}
	}

	// Requests that never reach a signature check.
	req := func(method, path, contentType string, body []byte, h http.Header) (int, map[string]any) {
		t.Helper()
		r, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		for k, v := range h {
			r.Header[k] = v
		}
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return resp.StatusCode, out
	}
	if status, out := req(http.MethodPost, "/webhooks/sume", "application/json", []byte(job1), nil); status != 401 || out["error"] != "signature missing" {
		t.Errorf("unsigned: %d %v", status, out)
	}
	if status, out := req(http.MethodPost, "/webhooks/sume", "text/plain", []byte(job1), signSume("sume-new-secret-0123", job1, now)); status != 415 {
		t.Errorf("text/plain: %d %v", status, out)
	}
	big := `{"job_id": "job_big", "event": "x", "pad": "` + strings.Repeat("x", 1<<20) + `"}`
	if status, out := req(http.MethodPost, "/webhooks/sume", "application/json", []byte(big), signSume("sume-new-secret-0123", big, now)); status != 413 {
		t.Errorf("2 MiB body: %d %v", status, out)
	}
	if status, _ := req(http.MethodGet, "/healthz", "", nil, nil); status != 200 {
		t.Errorf("healthz: %d", status)
	}

	// The rows: one per accepted key, the reconciled payload, nothing from a rejection.
	want := []string{"42", "evt_1", "evt_h", "job_1", "job_2", "req_9"}
	rows, err := pool.Query(context.Background(), `SELECT external_id FROM webhooks.events ORDER BY external_id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("stored keys %v, want %v", got, want)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'job_1' AND payload->>'v' = '2' AND revision = 2 AND status = 'pending'`); n != 1 {
		t.Error("job_1 does not carry the reconciled payload")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'req_9' AND event_type = 'format.completed' AND payload->'payload'->>'request_id' = 'nested_9'`); n != 1 {
		t.Error("req_9 is not stored as delivered")
	}
}

// TestExampleNodeReceiverDatabaseDown: when the database does not take the
// write the receiver answers 503 with Retry-After, so the provider retries.
func TestExampleNodeReceiverDatabaseDown(t *testing.T) {
	t.Parallel()
	node := needNode(t)
	// A loopback port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	base := startNodeReceiver(t, node, fmt.Sprintf("postgres://nobody@127.0.0.1:%d/nothing?sslmode=disable", port), "s")
	body := `{"job_id": "job_1", "event": "job.completed"}`
	r, _ := http.NewRequest(http.MethodPost, base+"/webhooks/sume", strings.NewReader(body))
	r.Header = signSume("s", body, time.Now())
	r.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(raw), "database unavailable") {
		t.Fatalf("database down: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), raw)
	}
}

// workerSummary is the JSON line worker.py prints when it exits.
type workerSummary struct {
	Processed, Failed, Dead, Lost, Released int
}

// runPythonWorker runs script (examples/python-worker/worker.py) --once as
// worker name and returns its summary. Safe from any goroutine.
func runPythonWorker(t *testing.T, python, script, databaseURL, name string, extra ...string) (workerSummary, error) {
	args := append([]string{script, "--once", "--worker", name, "--database-url", databaseURL}, extra...)
	cmd, stderr, wait := startProcess(t, 2*time.Minute, python, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		return workerSummary{}, err
	}
	if err := wait(); err != nil {
		return workerSummary{}, fmt.Errorf("worker %s: %v\nstderr: %s", name, err, stderr.String())
	}
	var s workerSummary
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &s); err != nil {
		return s, fmt.Errorf("worker %s: summary %q: %v", name, stdout.String(), err)
	}
	return s, nil
}

// TestExamplePythonWorker: three Python workers drain the queue together;
// every event is processed exactly once with one app row, and a failing
// handler leaves its event pending with the error and no app row.
func TestExamplePythonWorker(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	script := filepath.Join(examplesDir(t), "python-worker", "worker.py")
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	const n = 60
	for i := 0; i < n; i++ {
		ingest(t, pool, "sume", fmt.Sprintf("job_%02d", i), "job.completed", fmt.Sprintf(`{"job_id": "job_%02d", "status": "COMPLETED"}`, i))
	}
	ingest(t, pool, "sume", "job_bad", "job.completed", `{"job_id": "job_bad", "fail": "handler exploded"}`)

	const workers = 3
	sums := make([]workerSummary, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[w], errs[w] = runPythonWorker(t, python, script, conf.URL(), fmt.Sprintf("py-%d", w), "--batch", "4")
		}()
	}
	wg.Wait()
	var total workerSummary
	for w := range sums {
		if errs[w] != nil {
			t.Fatal(errs[w])
		}
		total.Processed += sums[w].Processed
		total.Failed += sums[w].Failed
		total.Lost += sums[w].Lost
	}
	if total != (workerSummary{Processed: n, Failed: 1}) {
		t.Errorf("workers reported %+v (each: %+v), want %d processed and 1 failed", total, sums, n)
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed' AND attempts = 1`); got != n {
		t.Errorf("processed at the first attempt: %d, want %d", got, n)
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM app.processed_jobs`); got != n {
		t.Errorf("app rows %d, want %d", got, n)
	}
	// Exactly once: one app row per processed event, written by the worker
	// that completed it, at the attempt it completed.
	if got := queryInt(t, pool, `
		SELECT count(*) FROM webhooks.events AS e
		WHERE e.status = 'processed'
		  AND (SELECT count(*) FROM app.processed_jobs AS p
		       WHERE p.event_id = e.id AND p.external_id = e.external_id AND p.provider = e.provider
		         AND p.event_type = e.event_type AND p.status = 'COMPLETED' AND p.attempt = e.attempts) = 1`); got != n {
		t.Errorf("events with exactly one matching app row: %d, want %d", got, n)
	}
	if got := queryInt(t, pool, `SELECT count(DISTINCT worker) FROM app.processed_jobs`); got < 2 {
		t.Logf("only %d worker(s) got work (the others started late)", got)
	}
	if got := queryInt(t, pool, `
		SELECT count(*) FROM webhooks.events
		WHERE external_id = 'job_bad' AND status = 'pending' AND attempts = 1 AND run_after >= updated_at + interval '0.7 seconds'
		  AND last_error = 'RuntimeError: handler exploded' AND locked_by IS NULL`); got != 1 {
		t.Error("the failing event is not pending with its error and a backoff")
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM app.processed_jobs WHERE external_id = 'job_bad'`); got != 0 {
		t.Errorf("the failing handler's write survived: %d rows", got)
	}

	// Run again once the backoff is over: the failure repeats, fenced on the new attempt.
	execSQL(t, pool, `UPDATE webhooks.events SET run_after = now() WHERE external_id = 'job_bad'`)
	s, err := runPythonWorker(t, python, script, conf.URL(), "py-again")
	if err != nil {
		t.Fatal(err)
	}
	if s != (workerSummary{Failed: 1}) {
		t.Errorf("second run: %+v", s)
	}
	if got := queryInt(t, pool, `SELECT attempts FROM webhooks.events WHERE external_id = 'job_bad'`); got != 2 {
		t.Errorf("attempts after the second run: %d", got)
	}
}

// TestExamplePythonWorkerLostLease: a Python handler still running when its
// lease is rescued and re-claimed gets false from complete() and rolls its
// write back; the new owner keeps the event.
func TestExamplePythonWorkerLostLease(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	script := filepath.Join(examplesDir(t), "python-worker", "worker.py")
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	ingest(t, pool, "sume", "slow", "job.completed", `{"job_id": "slow", "status": "COMPLETED", "sleep": 5}`)

	type result struct {
		s   workerSummary
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := runPythonWorker(t, python, script, conf.URL(), "py-slow", "--lease", "30 seconds")
		done <- result{s, err}
	}()
	waitFor(t, 30*time.Second, "the python worker to claim the slow event", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'slow' AND locked_by = 'py-slow'`) == 1
	})
	// While it sleeps, its lease runs out and another worker takes over.
	execSQL(t, pool, `UPDATE webhooks.events SET locked_until = now() - interval '1 second' WHERE external_id = 'slow'`)
	if n := queryInt(t, pool, `SELECT rescued FROM webhooks.rescue_leases()`); n != 1 {
		t.Fatalf("rescued %d", n)
	}
	if got := claim(t, pool, "thief", 1, "1 minute"); len(got) != 1 || got[0].Attempts != 2 {
		t.Fatalf("thief claimed %+v", got)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the python worker did not exit")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.s != (workerSummary{Lost: 1}) {
		t.Errorf("worker reported %+v, want 1 lost", r.s)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.processed_jobs`); n != 0 {
		t.Errorf("the stale handler's write survived: %d rows", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'slow' AND status = 'processing' AND locked_by = 'thief' AND attempts = 2`); n != 1 {
		t.Error("the new owner's lease was disturbed")
	}
}

// expectedBlocks returns the psql output the walk-through's comments
// promise: each run of "-- " comment lines whose second line is a psql
// header rule (----+----), without the "-- ".
func expectedBlocks(script string) [][]string {
	rule := regexp.MustCompile(`^-[-+]*-$`)
	var blocks [][]string
	var cur []string
	flush := func() {
		if len(cur) >= 3 && rule.MatchString(strings.TrimSpace(cur[1])) {
			blocks = append(blocks, cur)
		}
		cur = nil
	}
	for _, line := range strings.Split(script, "\n") {
		if rest, ok := strings.CutPrefix(line, "-- "); ok {
			cur = append(cur, strings.TrimRight(rest, " "))
			continue
		}
		flush()
	}
	flush()
	return blocks
}

// TestExamplePsqlWalkthrough: the psql walk-through runs with ON_ERROR_STOP,
// prints what its comments say, leaves the rows it describes, and can run again.
func TestExamplePsqlWalkthrough(t *testing.T) {
	t.Parallel()
	psql := needPsql(t)
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 2)
	script := filepath.Join(examplesDir(t), "psql", "walkthrough.sql")
	run := func() string {
		t.Helper()
		cmd, stderr, wait := startProcess(t, time.Minute, psql, "-X", "-v", "ON_ERROR_STOP=1", "-d", conf.URL(), "-f", script)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := wait(); err != nil {
			t.Fatalf("psql -f walkthrough.sql: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	out := run()

	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	blocks := expectedBlocks(string(src))
	if len(blocks) < 10 {
		t.Fatalf("found %d expected-output blocks in the walk-through's comments", len(blocks))
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	at := 0 // the blocks appear in order
	for _, b := range blocks {
		found := false
		for i := at; i+len(b) <= len(lines) && !found; i++ {
			if strings.Join(lines[i:i+len(b)], "\n") == strings.Join(b, "\n") {
				at, found = i+len(b), true
			}
		}
		if !found {
			t.Errorf("the walk-through's comment promises, after output line %d:\n%s\nbut psql printed:\n%s", at, strings.Join(b, "\n"), out)
			break
		}
	}

	check := func() {
		t.Helper()
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'walkthrough' AND status = 'processed'`); n != 2 {
			t.Errorf("processed walkthrough events: %d", n)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'walkthrough'`); n != 2 {
			t.Errorf("walkthrough events: %d", n)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM app.jobs_done WHERE job_id IN ('walk_1', 'walk_2')`); n != 2 {
			t.Errorf("app.jobs_done rows: %d", n)
		}
		if n := queryInt(t, pool, `
			SELECT count(*) FROM webhooks.replays AS r JOIN webhooks.events AS e ON e.id = r.event_id
			WHERE e.external_id = 'walk_2' AND r.previous_status = 'dead' AND r.reason = 'upstream fixed, retry by hand'`); n != 1 {
			t.Errorf("replays of walk_2: %d", n)
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'walkthrough' AND payload->>'v' = '2'`); n != 1 {
			t.Error("walk_1 does not carry its reconciled payload")
		}
	}
	check()
	run() // again, on the same database: it cleans up after itself
	check()
}

// TestExampleEmbedRunner goes further than runner.Example (its own code, not
// a copy of it): an application embeds the runner with its own
// runner.Handler, whose writes commit with the event's completion; a handler
// error fails the event and rolls its writes back.
func TestExampleEmbedRunner(t *testing.T) {
	t.Parallel()
	databaseURL := NewConfig(t).URL()
	pool := PoolFor(t, databaseURL, 2)
	// The application's own table (its own migrations would create it).
	execSQL(t, pool, `CREATE SCHEMA app; CREATE TABLE app.orders_paid (order_id text PRIMARY KEY, amount numeric NOT NULL)`)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	handler := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error {
		var p struct {
			OrderID string `json:"order_id"`
			Amount  string `json:"amount"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			return fmt.Errorf("event %d: %w", ev.ID, err)
		}
		if p.OrderID == "" {
			return fmt.Errorf("event %d: no order_id", ev.ID) // fails the event: retried later
		}
		// Runs in the transaction that completes the event: the row exists if and
		// only if the event is processed, once.
		_, err := tx.Exec(ctx, `INSERT INTO app.orders_paid (order_id, amount) VALUES ($1, $2)`, p.OrderID, p.Amount)
		return err
	})
	sume, err := verify.New("sume", []string{"sume-secret-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := runner.New(ctx, runner.Config{
		Addr:           "127.0.0.1:0",
		AdminAddr:      "off",
		Providers:      map[string]verify.Provider{"sume": sume},
		Handler:        handler,
		Workers:        2,
		ReconcileEvery: -1, // the schedules are not needed here
		ChecksEvery:    -1,
	}, databaseURL, logger)
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run(ctx) }()

	base := "http://" + srv.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	deliveries := []struct{ body, outcome string }{
		{`{"id": "evt_1", "type": "order.paid", "order_id": "ord_1", "amount": "12.50"}`, "created"},
		{`{"id": "evt_1", "type": "order.paid", "order_id": "ord_1", "amount": "12.50"}`, ""}, // duplicate, or processed already
		{`{"id": "evt_2", "type": "order.paid", "order_id": "ord_2", "amount": "3.00"}`, "created"},
		{`{"id": "evt_3", "type": "order.paid", "amount": "1.00"}`, "created"}, // the handler refuses it
	}
	for i, d := range deliveries {
		status, out := post(t, client, base+"/webhooks/sume", signSume("sume-secret-0123456789", d.body, time.Now()), []byte(d.body))
		if status != 200 || (d.outcome != "" && out["outcome"] != d.outcome) {
			t.Fatalf("delivery %d: %d %v", i, status, out)
		}
	}
	waitFor(t, 30*time.Second, "two events processed and one failed", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE status = 'processed'`) == 2 &&
			queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'evt_3' AND last_error LIKE '%no order_id%'`) == 1
	})
	cancel()
	select {
	case err := <-runErr:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60s of its context ending")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.orders_paid`); n != 2 {
		t.Errorf("app.orders_paid rows %d, want 2", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM app.orders_paid WHERE (order_id, amount) IN (('ord_1', 12.50), ('ord_2', 3.00))`); n != 2 {
		t.Error("app.orders_paid does not hold ord_1 and ord_2")
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'evt_3' AND status = 'pending' AND attempts >= 1`); n != 1 {
		t.Error("the refused event is not pending, to be retried")
	}
}
