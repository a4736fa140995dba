package tests

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"

	"github.com/pginbox/pginbox"
	"github.com/pginbox/pginbox/internal/localpg"
	"github.com/pginbox/pginbox/internal/pgtest"
	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/provider/providertest/kits"
	"github.com/pginbox/pginbox/internal/provider/square/squaretest"
	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner"
	"github.com/pginbox/pginbox/runner/verify"
)

// The harness lives in internal/pgtest (nothing outside the module may
// import what it pulls in); these names let the integration tests call it
// unqualified.
var (
	Server       = pgtest.Server
	StartCluster = pgtest.StartCluster
	NewConfig    = pgtest.NewConfig
	NewDB        = pgtest.NewDB
	NewPool      = pgtest.NewPool
	PoolFor      = pgtest.PoolFor
	SuperuserURL = pgtest.SuperuserURL
)

// ingest calls webhooks.ingest_webhook and returns its row.
func ingest(t testing.TB, pool *pgxpool.Pool, provider, externalID, eventType, payload string) (int64, string) {
	t.Helper()
	var id int64
	var outcome string
	err := pool.QueryRow(context.Background(),
		`SELECT event_id, outcome FROM webhooks.ingest_webhook($1, $2, $3, $4::jsonb)`,
		provider, externalID, eventType, payload).Scan(&id, &outcome)
	if err != nil {
		t.Fatalf("ingest %s/%s: %v", provider, externalID, err)
	}
	return id, outcome
}

// queryInt runs a query returning one integer.
func queryInt(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// execSQL runs a statement.
func execSQL(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// claimed is one row handed out by webhooks.claim.
type claimed struct {
	ID       int64
	Attempts int32
}

// fences returns a claimed batch as the parallel arrays of ids and attempts
// that process_batch() and leased_events() take.
func fences(batch []claimed) (ids []int64, attempts []int32) {
	ids = make([]int64, len(batch))
	attempts = make([]int32, len(batch))
	for i, c := range batch {
		ids[i], attempts[i] = c.ID, c.Attempts
	}
	return ids, attempts
}

// claim calls webhooks.claim for worker.
func claim(t testing.TB, pool *pgxpool.Pool, worker string, max int, lease string) []claimed {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT id, attempts FROM webhooks.claim($1, $2, $3::interval) ORDER BY id`, worker, max, lease)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	defer rows.Close()
	var out []claimed
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.ID, &c.Attempts); err != nil {
			t.Fatalf("claim scan: %v", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("claim: %v", err)
	}
	return out
}

// wantPgError fails t unless err is a Postgres error with SQLSTATE code whose
// message contains substr.
func wantPgError(t testing.TB, err error, code, substr string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("want Postgres error %s (%q), got %v", code, substr, err)
	}
	if pgErr.Code != code || !strings.Contains(pgErr.Message, substr) {
		t.Fatalf("want error %s containing %q, got %s: %s", code, substr, pgErr.Code, pgErr.Message)
	}
}

// stringsReader is strings.NewReader as an io.Reader.
func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// nowFunc is time.Now, named for tests that sign deliveries.
var nowFunc = time.Now

// noticeConnURL opens a connection to url that collects the notices the
// server sends it, runs the setup statements on it, and closes it when the
// test ends. The function returned gives the notices received so far.
func noticeConnURL(t testing.TB, url string, setup ...string) (*pgx.Conn, func() []string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n.Message)
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, s := range setup {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return conn, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(notices)
	}
}

const sumeSecret = "sume-test-secret"

var sumeOnly = map[string][2]string{"sume": {"sume", sumeSecret}}

// metricValue reads one counter from /metrics at base (the admin
// listener); label, when given, selects one series (`provider="gh"`).
func metricValue(t *testing.T, base, name string, label ...string) int64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		// A counter read from the wrong listener must not pass as 0.
		t.Fatalf("GET %s/metrics: %s", base, resp.Status)
	}
	series := regexp.QuoteMeta(name)
	if len(label) > 0 {
		series += `\{` + regexp.QuoteMeta(label[0]) + `\}`
	}
	m := regexp.MustCompile(`(?m)^` + series + ` (\d+)`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return v
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// newRole creates the login role role with password "pw" (through the
// server's superuser: the test database's owner may not create roles), lets
// grant (run as the owner, at ownerURL; none when "") give it its rights,
// drops it when the test ends and returns the URL that connects as it.
func newRole(t *testing.T, ownerURL, role, grant string) string {
	t.Helper()
	ctx := context.Background()
	u, err := url.Parse(ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	ident := pgx.Identifier{role}.Sanitize()
	super, err := pgx.Connect(ctx, SuperuserURL(t, db))
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	if _, err := super.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'pw'`, ident)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, SuperuserURL(t, db))
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, role)
		_, _ = c.Exec(ctx, fmt.Sprintf(`DROP OWNED BY %[1]s; DROP ROLE %[1]s`, ident))
	})
	if grant != "" {
		owner, err := pgx.Connect(ctx, ownerURL)
		if err != nil {
			t.Fatal(err)
		}
		defer owner.Close(ctx)
		if _, err := owner.Exec(ctx, `SELECT webhooks.`+grant+`($1)`, role); err != nil {
			t.Fatalf("%s(%s): %v", grant, role, err)
		}
	}
	u.User = url.UserPassword(role, "pw")
	return u.String()
}

// roleConn creates role with newRole and returns a connection as it.
func roleConn(t *testing.T, ownerURL, role, grant string) *pgx.Conn {
	t.Helper()
	return connect(t, newRole(t, ownerURL, role, grant))
}

func reconcile(t testing.TB, pool *pgxpool.Pool) reconcileResult {
	t.Helper()
	r, _ := reconcileOn(t, pool, `webhooks.reconcile()`)
	if r.Skipped {
		t.Fatalf("reconcile() skipped with no other pass running")
	}
	return r
}

// completeWithWrite is a handler: it writes to public.handled and completes
// the event in the same transaction, rolling back when the lease was lost.
func completeWithWrite(ctx context.Context, pool *pgxpool.Pool, c claimed, worker string) (bool, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `INSERT INTO public.handled (event_id, worker) VALUES ($1, $2)`, c.ID, worker); err != nil {
		return false, fmt.Errorf("handler write: %w", err)
	}
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT webhooks.complete($1, $2, $3)`, c.ID, worker, c.Attempts).Scan(&ok); err != nil {
		return false, fmt.Errorf("complete: %w", err)
	}
	if !ok {
		return false, nil // lease lost: the handler's write rolls back
	}
	return true, tx.Commit(ctx)
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sideTableSQL creates app.seen and app.on_webhook(webhooks.events), which
// records each event it handles there (after pg_sleep(payload.sleep) when the
// payload has one).
const sideTableSQL = `
	CREATE SCHEMA app;
	CREATE TABLE app.seen (event_id bigint NOT NULL, external_id text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
	CREATE FUNCTION app.on_webhook(e webhooks.events) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
	    IF e.payload ? 'sleep' THEN
	        PERFORM pg_sleep((e.payload->>'sleep')::float8);
	    END IF;
	    INSERT INTO app.seen (event_id, external_id) VALUES (e.id, e.external_id);
	END $$;`

// sideTableHandler is the handler spec that runs app.on_webhook.
const sideTableHandler = "sql:app.on_webhook"

// sideTable creates app.seen and app.on_webhook (sideTableSQL) in pool's
// database and returns the sql: handler that runs it, with a 1s timeout.
func sideTable(t testing.TB, pool *pgxpool.Pool) runner.Handler {
	t.Helper()
	execSQL(t, pool, sideTableSQL)
	h, err := runner.ParseHandler(sideTableHandler, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// recordingHandler records the external ids it handled.
func recordingHandler() (runner.Handler, func(string) bool) {
	var mu sync.Mutex
	seen := map[string]int{}
	h := runner.HandlerFunc(func(_ context.Context, _ pgx.Tx, ev *runner.Event) error {
		mu.Lock()
		seen[ev.ExternalID]++
		mu.Unlock()
		return nil
	})
	return h, func(k string) bool {
		mu.Lock()
		defer mu.Unlock()
		return seen[k] > 0
	}
}

// runnerProc is a `pginbox serve` subprocess.
type runnerProc struct {
	cmd   *exec.Cmd
	Base  string
	Admin string // the admin listener's base URL
	done  chan struct{}
	mu    sync.Mutex
	log   []string
}

// startRunner starts `pginbox serve` with env on a free port and waits until
// /readyz answers 200.
func startRunner(t *testing.T, env map[string]string) *runnerProc {
	t.Helper()
	return startProgram(t, env, pginboxBinary(t), "serve")
}

// startProgram is startRunner for another program that runs a runner (bin
// with args), configured like `pginbox serve` by env.
func startProgram(t *testing.T, env map[string]string, bin string, args ...string) *runnerProc {
	t.Helper()
	addr := env["PGINBOX_ADDR"]
	if addr == "" {
		port, err := localpg.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	admin := env["PGINBOX_ADMIN_ADDR"]
	if admin == "" {
		port, err := localpg.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		admin = fmt.Sprintf("127.0.0.1:%d", port)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PGINBOX_ADDR="+addr, "PGINBOX_ADMIN_ADDR="+admin)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &runnerProc{cmd: cmd, Base: "http://" + addr, Admin: "http://" + admin, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.Kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.Base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("pginbox serve exited early:\n%s", p.Logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pginbox serve not ready after 30s:\n%s", p.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Logs returns what the process wrote to stderr.
func (p *runnerProc) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// Kill sends SIGKILL and waits for the process to go.
func (p *runnerProc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Terminate sends SIGTERM and waits up to timeout for a graceful exit.
func (p *runnerProc) Terminate(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("exit code %d", code)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("still running after %v", timeout)
	}
}

// checkResult is one row of webhooks.run_checks().
type checkResult struct {
	Name   string
	Family string
	Value  *float64
	MinOK  *float64
	MaxOK  *float64
	OK     bool
}

func (r checkResult) String() string {
	v := "NULL"
	if r.Value != nil {
		v = fmt.Sprint(*r.Value)
	}
	return fmt.Sprintf("%s=%s [%s, %s]", r.Name, v, bound(r.MinOK), bound(r.MaxOK))
}

func bound(b *float64) string {
	if b == nil {
		return "-"
	}
	return fmt.Sprint(*b)
}

// runChecks calls webhooks.run_checks() in a transaction of its own.
func runChecks(t testing.TB, pool *pgxpool.Pool) []checkResult {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT name, family, value::float8, min_ok::float8, max_ok::float8, ok
		FROM webhooks.run_checks()`)
	if err != nil {
		t.Fatalf("run_checks: %v", err)
	}
	res, err := pgx.CollectRows(rows, pgx.RowToStructByPos[checkResult])
	if err != nil {
		t.Fatalf("run_checks: %v", err)
	}
	return res
}

// breaches lists the checks that are not ok, sorted, with their values.
func breaches(res []checkResult) (names []string, detail string) {
	var parts []string
	for _, r := range res {
		if !r.OK {
			names = append(names, r.Name)
			parts = append(parts, r.String())
		}
	}
	slices.Sort(names)
	return names, strings.Join(parts, "; ")
}

func refreshViews(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	execSQL(t, pool, `SELECT webhooks.refresh_views()`)
}

// processAll claims and completes every claimable event, in batches, the way
// a worker does (claim in one transaction, complete in another).
func processAll(t testing.TB, pool *pgxpool.Pool, worker string) int {
	t.Helper()
	total := 0
	for {
		batch := claim(t, pool, worker, 500, "5 minutes")
		if len(batch) == 0 {
			return total
		}
		ids, attempts := fences(batch)
		if n := queryInt(t, pool, `
			SELECT count(*) FILTER (WHERE webhooks.complete(c.id, $1, c.attempt))
			FROM unnest($2::bigint[], $3::int[]) AS c(id, attempt)`, worker, ids, attempts); n != int64(len(batch)) {
			t.Fatalf("completed %d of %d claimed events", n, len(batch))
		}
		total += len(batch)
	}
}

// ingestMany ingests n events provider/prefix-1..n of eventType in one
// statement; payload is a SQL expression over g (the sequence number).
func ingestMany(t testing.TB, pool *pgxpool.Pool, provider, prefix, eventType string, n int, payload, source string) {
	t.Helper()
	if payload == "" {
		payload = `jsonb_build_object('id', $2::text || g)`
	}
	if source == "" {
		source = "webhook"
	}
	got := queryInt(t, pool, `
		SELECT count(*) FROM generate_series(1, $4::int) AS g,
		LATERAL webhooks.ingest_webhook($1, $2::text || g, $3, `+payload+`, $5) AS i
		WHERE i.outcome = 'created'`, provider, prefix, eventType, n, source)
	if got != int64(n) {
		t.Fatalf("ingested %d of %d events %s/%s*", got, n, provider, prefix)
	}
}

// traffic ingests n events and processes them all.
func traffic(t testing.TB, pool *pgxpool.Pool, provider, prefix string, n int) {
	t.Helper()
	ingestMany(t, pool, provider, prefix, "thing.happened", n, "", "")
	processAll(t, pool, "w-"+provider)
}

// backdate moves the receipt, claim and completion of the events matching
// where back by ago, keeping their latencies.
func backdate(t testing.TB, pool *pgxpool.Pool, ago, where string) {
	t.Helper()
	execSQL(t, pool, `
		UPDATE webhooks.events
		SET received_at  = received_at - $1::interval,
		    run_after    = run_after - $1::interval,
		    claimed_at   = claimed_at - $1::interval,
		    processed_at = processed_at - $1::interval,
		    updated_at   = updated_at - $1::interval
		WHERE `+where, ago)
}

// reconcilePass records a reconciliation pass the way reconcile() does, so
// the cases below do not trip reconcile_age_seconds unless they mean to.
func reconcilePass(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	execSQL(t, pool, `INSERT INTO webhooks.reconcile_runs (finished_at, trigger) VALUES (now(), 'test')`)
}

// holdConn opens a connection of its own (closed when t ends) on the
// database behind pool.
func holdConn(t testing.TB, pool *pgxpool.Pool) *pgx.Conn {
	t.Helper()
	return connect(t, pool.Config().ConnString())
}

// testServer is a pginbox runner serving on a loopback port.
type testServer struct {
	Srv    *runner.Server
	Base   string
	Admin  string // the admin listener's base URL ("" when off)
	cancel context.CancelFunc
	done   chan error
}

// startServer runs runner.New + Run against dbURL until the test ends.
// Providers: name=kind with secrets; the schedules are off unless set.
func startServer(t *testing.T, dbURL string, cfg runner.Config, providers map[string][2]string) *testServer {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.AdminAddr == "" {
		cfg.AdminAddr = "127.0.0.1:0"
	}
	if cfg.ReconcileEvery == 0 {
		cfg.ReconcileEvery = -1
	}
	if cfg.ChecksEvery == 0 {
		cfg.ChecksEvery = -1
	}
	if cfg.Providers == nil {
		cfg.Providers = map[string]verify.Provider{}
	}
	for name, ks := range providers {
		p, err := verify.NewWithURL(ks[0], strings.Split(ks[1], ","), squareURL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Providers[name] = p
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := runner.New(context.Background(), cfg, dbURL, log)
	if err != nil {
		t.Fatalf("runner.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Run(ctx) }()
	ts.Base = "http://" + srv.Addr().String()
	if a := srv.AdminAddr(); a != nil {
		ts.Admin = "http://" + a.String()
	}
	t.Cleanup(func() { ts.Stop(t) })
	return ts
}

// Stop shuts the server down gracefully (idempotent).
func (s *testServer) Stop(t *testing.T) {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("server: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Error("server did not shut down within 60s")
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// post sends a delivery and returns the status and decoded JSON body.
func post(t *testing.T, client *http.Client, url string, h http.Header, body []byte) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if _, ok := req.Header["Content-Type"]; !ok {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s: %d with a body that is not JSON: %q", url, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// signSume builds Sume's headers from its published recipe.
var signSume = testsign.Sume

// kitOf returns the test kit of a provider kind
// (internal/provider/<kind>/<kind>test): its two secrets, its sample body
// for a key and its signer, which the HTTP tests use for every kind instead
// of a table of their own. It panics for a kind without a kit (the list of
// kinds gives each one: TestEveryKindIsComplete).
func kitOf(kind string) providertest.Kit {
	k, ok := kits.For(kind)
	if !ok {
		panic("tests: provider kind " + kind + " has no test kit")
	}
	return k
}

// squareURL is the notification URL startServer gives every provider of
// kind square: the one square's kit signs (the URL registered at Square),
// not the test server's own address, as behind a proxy.
const squareURL = squaretest.URL

// sampleBody is the kit's sample delivery of kind whose idempotency key is
// key (in the body, or in a header the kit's signer sets).
func sampleBody(kind, key string) string {
	return kitOf(kind).Body(key)
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// pginboxBinary builds bin/pginbox once per test binary.
func pginboxBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pginbox-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "pginbox")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/pginbox/pginbox/runner/cmd/pginbox").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// connect opens a connection of its own to url, closed when t ends.
func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// orderedHandler is the SQL handler setupOrdered creates.
const orderedHandler = "app.ordered(webhooks.events)"

// pendingRow is one row of webhooks.process_pending() (or of
// process_batch(), which returns no attempt), with its event's external id.
type pendingRow struct {
	EventID    int64   `db:"event_id"`
	ExternalID string  `db:"external_id"`
	Outcome    string  `db:"outcome"`
	Error      *string `db:"error"`
	Attempt    int32   `db:"attempt"`
}

// rowQuerier is a pool, a connection or a transaction.
type rowQuerier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// runPending runs one webhooks.process_pending(handler, worker, max) on q
// and returns its rows in the order it returned them. It fails no test, so
// a goroutine may call it; processPending is the test's own.
func runPending(ctx context.Context, q rowQuerier, handler, worker string, max int) ([]pendingRow, error) {
	rows, err := q.Query(ctx, `SELECT p.event_id, e.external_id, p.outcome, p.error, p.attempt
		FROM webhooks.process_pending($1::text::regprocedure, $2, $3) WITH ORDINALITY AS p
		JOIN webhooks.events AS e ON e.id = p.event_id
		ORDER BY p.ordinality`, handler, worker, max)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[pendingRow])
}

// processPending is runPending for the test's goroutine: an error fails t.
func processPending(t testing.TB, q rowQuerier, handler, worker string, max int) []pendingRow {
	t.Helper()
	out, err := runPending(context.Background(), q, handler, worker, max)
	if err != nil {
		t.Fatalf("process_pending(%s, %s, %d): %v", handler, worker, max, err)
	}
	return out
}

// migrateToBefore migrates db (whose schema webhooks exists) up to the
// version just before the first migration whose text holds marker, found by
// content so that renumbering the files changes nothing, and returns the
// provider for the rest.
func migrateToBefore(t *testing.T, db *sql.DB, marker string) *goose.Provider {
	t.Helper()
	fsys, err := pginbox.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	names, err := pginbox.MigrationFiles()
	if err != nil {
		t.Fatal(err)
	}
	var before int64
	for _, name := range names {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), marker) {
			v, _ := strconv.ParseInt(name[:5], 10, 64)
			before = v - 1
			break
		}
	}
	if before <= 0 {
		t.Fatalf("no migration holds %q", marker)
	}
	p, err := pginbox.NewMigrationProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), before); err != nil {
		t.Fatalf("up to %d: %v", before, err)
	}
	return p
}
