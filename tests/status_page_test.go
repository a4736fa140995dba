package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
)

// seedStatus makes a database with normal traffic plus one dead event, then
// refreshes the views and runs the checks, returning the breached checks.
func seedStatus(t *testing.T, url string) (deadID int64, breached []string) {
	t.Helper()
	pool := PoolFor(t, url, 4)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		id, _ := ingest(t, pool, "sume", "job_ok_"+string(rune('a'+i)), "job.completed", `{"status": "COMPLETED"}`)
		c := claim(t, pool, "w", 1, "1 minute")
		execSQL(t, pool, `SELECT webhooks.complete($1, 'w', $2)`, id, c[0].Attempts)
	}
	deadID, _ = ingest(t, pool, "sume", "job_dead", "job.completed", `{"status": "COMPLETED"}`)
	execSQL(t, pool, `UPDATE webhooks.events SET max_attempts = 1 WHERE id = $1`, deadID)
	claim(t, pool, "w", 1, "1 minute")
	execSQL(t, pool, `SELECT webhooks.fail($1, 'w', 1, 'handler exploded')`, deadID)
	execSQL(t, pool, `SELECT webhooks.refresh_views()`)
	rows, err := pool.Query(ctx, `SELECT name FROM webhooks.run_checks() WHERE NOT ok ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	breached, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(breached) == 0 {
		t.Fatal("a dead event breached no check: the page would have nothing red to show")
	}
	return deadID, breached
}

// TestStatusAPI: /api/status carries the checks, the breach and the dead
// event; /metrics a gauge per check.
func TestStatusAPI(t *testing.T) {
	t.Parallel()
	conf := NewConfig(t)
	deadID, breached := seedStatus(t, conf.URL())
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)
	resp, err := http.Get(srv.Admin + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The fields of GET /api/status this test reads.
	var st struct {
		Queue    map[string]int64  `json:"queue"`
		Checks   []json.RawMessage `json:"checks"`
		Breaches int               `json:"breaches"`
		Traffic  []json.RawMessage `json:"traffic"`
		Dead     []struct {
			ID int64 `json:"id"`
		} `json:"dead"`
		Errors []string `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if len(st.Errors) > 0 {
		t.Fatalf("sections unavailable: %v", st.Errors)
	}
	if len(st.Checks) < 30 || st.Breaches != len(breached) {
		t.Fatalf("%d checks, %d breaches; want ≥ 30 checks and %d breaches (%v)", len(st.Checks), st.Breaches, len(breached), breached)
	}
	if len(st.Dead) != 1 || st.Dead[0].ID != deadID || st.Queue["dead"] != 1 || st.Queue["pending"] != 0 {
		t.Fatalf("dead %v, queue %v", st.Dead, st.Queue)
	}
	if len(st.Traffic) == 0 {
		t.Fatal("no traffic buckets after refresh_views()")
	}
	metrics := httpGet(t, srv.Admin+"/metrics")
	for _, name := range breached {
		if !strings.Contains(metrics, `pginbox_check_ok{family=`) || !strings.Contains(metrics, `name="`+name+`"} 0`) {
			t.Errorf("/metrics lacks pginbox_check_ok 0 for %s", name)
		}
	}
}

// TestStatusPageInBrowser: the page, opened in headless Chromium, shows every
// family and the seeded breach in red; a screenshot is saved.
func TestStatusPageInBrowser(t *testing.T) {
	t.Parallel()
	browser := findBrowser()
	if browser == "" {
		t.Skip("no Chromium found (.ci/run installs Debian's chromium; apt-get install chromium)")
	}
	conf := NewConfig(t)
	_, breached := seedStatus(t, conf.URL())
	srv := startServer(t, conf.URL(), runner.Config{}, sumeOnly)

	profile := t.TempDir()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--window-size=1280,2200"}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dom, err := exec.CommandContext(ctx, browser, append(flags, "--dump-dom", srv.Admin+"/")...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	page := string(dom)
	for _, family := range []string{"latency", "referential", "volume", "payload", "database"} {
		if !strings.Contains(page, `id="family-`+family+`"`) {
			t.Errorf("the page shows no %s family", family)
		}
	}
	for _, name := range breached {
		if !strings.Contains(page, `class="check bad" id="check-`+name+`"`) {
			t.Errorf("breached check %s is not shown in red", name)
		}
	}
	if !strings.Contains(page, "job_dead") {
		t.Error("the dead event is missing")
	}
	out := filepath.Join("out", "status-page.png")
	if err := os.MkdirAll("out", 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(out)
	if b, err := exec.CommandContext(ctx, browser, append(flags, "--screenshot="+abs, srv.Admin+"/")...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, b)
	}
	if fi, err := os.Stat(abs); err != nil || fi.Size() < 10000 {
		t.Fatalf("screenshot %s: %v", abs, err)
	}
	t.Logf("screenshot: %s", abs)
}

func findBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
