package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/runner"
)

// TestConsoleInBrowser drives the console in headless Chromium the way an
// operator would: log in, filter the list by provider and status, search a
// payload value, open the event, replay it with a reason and see it
// processed; bulk-replay a filter of dead events; pause a provider and see
// its events stay pending. No JavaScript error may be logged. Screenshots
// of home, list and detail go to tests/out/.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	browser := findBrowser()
	if browser == "" {
		t.Skip("no Chromium found (tests/ensure-browser.sh installs Debian's chromium)")
	}
	conf := NewConfig(t)
	pool := PoolFor(t, conf.URL(), 4)
	// Traffic for the charts, a dead event to find by its payload, three
	// dead ones of one type for the bulk replay.
	traffic(t, pool, "sume", "job_ok_", 30)
	target := deadEvent(t, pool, "job_cus123")
	execSQL(t, pool, `UPDATE webhooks.events SET payload = '{"job_id": "job_cus123", "customer": "cus_123", "amount": 4200, "lines": [{"sku": "pro", "qty": 1}]}' WHERE id = $1`, target)
	for i := 0; i < 3; i++ {
		id := deadEvent(t, pool, fmt.Sprintf("job_bulk_%d", i))
		execSQL(t, pool, `UPDATE webhooks.events SET event_type = 'job.bulk' WHERE id = $1`, id)
	}
	deadEvent(t, pool, "job_other_dead") // matches status=dead but not the bulk filter
	execSQL(t, pool, `SELECT webhooks.refresh_views()`)
	execSQL(t, pool, `SELECT * FROM webhooks.run_checks()`)

	h := runner.HandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *runner.Event) error { return nil })
	srv := startServer(t, conf.URL(), runner.Config{Handler: h, Workers: 2, PollInterval: 200 * time.Millisecond, AdminToken: testAdminToken},
		map[string][2]string{"sume": {"sume", sumeSecret}, "stripe": {"stripe", "whsec_stripe_test_secret_0123"}})

	// Not t.TempDir: Chromium's helpers may still write to the profile
	// while the test's cleanup removes it.
	profile, err := os.MkdirTemp("", "pginbox-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; i < 20 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.Flag("disable-gpu", true), chromedp.UserDataDir(profile))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	defer cancelT()

	var mu sync.Mutex
	var jsErrors []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			jsErrors = append(jsErrors, "exception: "+e.ExceptionDetails.Text)
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type == cdpruntime.APITypeError {
				jsErrors = append(jsErrors, "console.error")
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.LevelError && !strings.Contains(e.Entry.URL, "favicon") {
				jsErrors = append(jsErrors, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *page.EventJavascriptDialogOpening:
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shot := func(name string) {
		t.Helper()
		var buf []byte
		run("screenshot "+name, chromedp.CaptureScreenshot(&buf))
		if err := os.MkdirAll("out", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("out", name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// submit clicks sel and waits for the next document to load (the old
	// page's elements would satisfy a WaitVisible at once).
	submit := func(what, sel string) {
		t.Helper()
		run(what+": mark", chromedp.Evaluate(`window.__old = true`, nil))
		run(what+": click", chromedp.Click(sel, chromedp.ByQuery))
		deadline := time.Now().Add(20 * time.Second)
		for {
			var fresh bool
			if err := chromedp.Run(ctx, chromedp.Evaluate(`!window.__old && document.readyState === "complete"`, &fresh)); err == nil && fresh {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no new page after 20s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	text := func(sel string) string {
		t.Helper()
		var s string
		run("read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
		return s
	}

	// Log in.
	run("log in", log.Enable(), chromedp.Navigate(srv.Admin+"/"), chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", testAdminToken, chromedp.ByQuery))
	submit("log in", "form button.primary")
	run("home", chromedp.WaitVisible("#verdict", chromedp.ByQuery))
	if v := text("#verdict"); !strings.Contains(v, "breached") {
		t.Fatalf("verdict %q: a dead event should breach a check", v)
	}
	shot("console-home.png")
	dark := emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}})
	run("dark", dark)
	shot("console-home-dark.png")
	run("light", emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}))

	// Filter by provider and status, then search a payload value.
	run("filter", chromedp.Navigate(srv.Admin+"/events"), chromedp.WaitVisible("#filters", chromedp.ByQuery),
		chromedp.SendKeys(`#filters input[name=provider]`, "sume", chromedp.ByQuery),
		chromedp.SetValue(`#filters select[name=status]`, "dead", chromedp.ByQuery))
	submit("filter", "#apply")
	var statuses []string
	run("read statuses", chromedp.Evaluate(`[...document.querySelectorAll("#event-table tbody tr")].map(r => r.className)`, &statuses))
	if len(statuses) != 5 {
		t.Fatalf("sume + dead shows %d rows, want 5", len(statuses))
	}
	for _, c := range statuses {
		if !strings.Contains(c, "st-dead") {
			t.Fatalf("a row of class %q under status=dead", c)
		}
	}
	shot("console-events.png")
	run("payload search", chromedp.SendKeys(`#filters input[name=payload]`, `{"customer": "cus_123"}`, chromedp.ByQuery))
	submit("payload search", "#apply")
	var ids []string
	run("read ids", chromedp.Evaluate(`[...document.querySelectorAll("#event-table tbody tr")].map(r => r.dataset.id)`, &ids))
	if len(ids) != 1 || ids[0] != fmt.Sprint(target) {
		var loc string
		_ = chromedp.Run(ctx, chromedp.Location(&loc))
		t.Fatalf("payload search shows %v, want only event %d (at %s)", ids, target, loc)
	}

	// Open it, replay it with a reason, see it processed.
	submit("open the event", `#event-table tbody tr a`)
	run("event page", chromedp.WaitVisible("#payload", chromedp.ByQuery))
	if p := text("#payload"); !strings.Contains(p, "\"customer\": \"cus_123\"") || !strings.Contains(p, "\n") {
		t.Fatalf("payload not pretty-printed: %q", p)
	}
	if tl := text("#timeline"); !strings.Contains(tl, "attempt 1 failed") || !strings.Contains(tl, "handler exploded") {
		t.Fatalf("timeline lacks the failure: %q", tl)
	}
	shot("console-event.png")
	run("replay", chromedp.SendKeys("#replay-reason", "handler fixed in v1.4.2", chromedp.ByQuery))
	submit("replay", "#replay-button")
	run("replayed", chromedp.WaitVisible("#flash", chromedp.ByQuery))
	waitFor(t, 20*time.Second, "the replayed event processed", func() bool {
		var st string
		_ = chromedp.Run(ctx, chromedp.Reload(), chromedp.WaitVisible("#event-status", chromedp.ByQuery), chromedp.Text("#event-status", &st, chromedp.ByQuery))
		return st == "processed"
	})
	if tl := text("#timeline"); !strings.Contains(tl, "handler fixed in v1.4.2") || !strings.Contains(tl, "processed") {
		t.Fatalf("timeline lacks the replay and its processing: %q", tl)
	}

	// Bulk-replay a filter of dead events: the count first, then the replay.
	run("bulk count", chromedp.Navigate(srv.Admin+"/events?status=dead&event_type=job.bulk"),
		chromedp.WaitVisible("#bulk-count-button", chromedp.ByQuery))
	submit("bulk count", "#bulk-count-button")
	run("bulk confirm", chromedp.WaitVisible("#bulk-count", chromedp.ByQuery))
	if n := text("#bulk-count"); n != "3" {
		t.Fatalf("the bulk replay announces %q events, want 3", n)
	}
	run("bulk replay", chromedp.SendKeys(`#bulk-confirm input[name=reason]`, "bulk after fix", chromedp.ByQuery))
	submit("bulk replay", "#bulk-go")
	run("bulk replayed", chromedp.WaitVisible("#flash", chromedp.ByQuery))
	if f := text("#flash"); !strings.Contains(f, "Replayed 3 events") {
		t.Fatalf("flash after the bulk replay: %q", f)
	}
	waitFor(t, 20*time.Second, "the bulk-replayed events processed", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE event_type = 'job.bulk' AND status = 'processed'`) == 3
	})
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'job_other_dead' AND status = 'dead'`); n != 1 {
		t.Fatal("the bulk replay touched an event outside its filter")
	}

	// Pause stripe from the overview: its events stay pending.
	run("pause", chromedp.Navigate(srv.Admin+"/"), chromedp.WaitVisible("#pause-stripe", chromedp.ByQuery),
		chromedp.SendKeys(`#pause-table form[action="/providers/stripe/pause"] input[name=reason]`, "fixing invoices", chromedp.ByQuery))
	submit("pause", "#pause-stripe")
	run("paused", chromedp.WaitVisible("#paused-banner", chromedp.ByQuery))
	ingestMany(t, pool, "stripe", "evt_", "invoice.paid", 5, "", "")
	ingest(t, pool, "sume", "job_after_pause", "job.completed", `{}`)
	waitFor(t, 20*time.Second, "sume still processed", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE external_id = 'job_after_pause' AND status = 'processed'`) == 1
	})
	time.Sleep(time.Second)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.events WHERE provider = 'stripe' AND status = 'pending' AND attempts = 0`); n != 5 {
		t.Fatalf("%d of 5 stripe events still pending while paused", n)
	}
	run("list paused", chromedp.Navigate(srv.Admin+"/events?provider=stripe"), chromedp.WaitVisible("#paused-banner", chromedp.ByQuery))
	if b := text("#paused-banner"); !strings.Contains(b, "stripe") {
		t.Fatalf("paused banner %q", b)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(jsErrors) > 0 {
		t.Fatalf("JavaScript errors in the console: %v", jsErrors)
	}
	t.Logf("screenshots in %s", filepath.Join("tests", "out"))
}
