package tests

// The Prometheus alerting rules shipped in deploy/prometheus: their unit
// tests pass under promtool, their runbook links land on a section of
// docs/operations.md, and every series they name is one a runner serves.

import (
	"context"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner"
)

// rulesDir is deploy/prometheus at the root of the module.
const rulesDir = "../deploy/prometheus"

// pendingMetrics are series a rule names ahead of the code that serves
// them, each with the work that adds it: the test logs them instead of
// failing. Empty once that work is merged.
var pendingMetrics = map[string]string{}

// TestPrometheusRules: `promtool check rules` accepts pginbox-rules.yml and
// `promtool test rules` passes its unit tests (installed by
// tests/ensure-promtool.sh when missing; the test fails, never skips,
// without it).
func TestPrometheusRules(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		aptMu.Lock() // one apt-get at a time with the other tests' installs
		out, ierr := exec.CommandContext(ctx, "./ensure-promtool.sh").CombinedOutput()
		aptMu.Unlock()
		if promtool, err = exec.LookPath("promtool"); err != nil {
			t.Fatalf("promtool is missing and tests/ensure-promtool.sh could not install it: %v\n%s", ierr, out)
		}
	}
	for _, args := range [][]string{
		{"check", "rules", "pginbox-rules.yml"},
		{"test", "rules", "pginbox-rules.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = rulesDir
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestRulesLinkRunbooks: every alert has a summary and a runbook_url on a
// heading of docs/operations.md.
func TestRulesLinkRunbooks(t *testing.T) {
	t.Parallel()
	rules := readFile(t, filepath.Join(rulesDir, "pginbox-rules.yml"))
	ops := readFile(t, "../docs/operations.md")
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(ops, -1) {
		anchors[githubAnchor(m[1])] = true
	}
	alerts := regexp.MustCompile(`(?m)^\s+- alert: (\w+)$`).FindAllStringSubmatchIndex(rules, -1)
	if len(alerts) < 8 {
		t.Fatalf("%d alerts in pginbox-rules.yml", len(alerts))
	}
	for i, a := range alerts {
		name := rules[a[2]:a[3]]
		end := len(rules)
		if i+1 < len(alerts) {
			end = alerts[i+1][0]
		}
		rule := rules[a[0]:end]
		if !strings.Contains(rule, "summary: ") {
			t.Errorf("%s has no summary", name)
		}
		m := regexp.MustCompile(`runbook_url: "https://github\.com/pginbox/pginbox/blob/main/docs/operations\.md#([a-z0-9-]+)"`).FindStringSubmatch(rule)
		if m == nil {
			t.Errorf("%s has no runbook_url into docs/operations.md", name)
			continue
		}
		if !anchors[m[1]] {
			t.Errorf("%s: runbook anchor #%s is no heading of docs/operations.md", name, m[1])
		}
	}
}

// githubAnchor is the anchor GitHub gives a heading.
func githubAnchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = regexp.MustCompile("[^a-z0-9 _-]").ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}

// ruleExprs returns the expr of each rule: one line, or the lines of a
// folded block (expr: >) indented deeper than the key.
func ruleExprs(rules string) []string {
	var exprs []string
	lines := strings.Split(rules, "\n")
	for i := 0; i < len(lines); i++ {
		key, rest, ok := strings.Cut(lines[i], "expr: ")
		if !ok || strings.TrimSpace(key) != "" {
			continue
		}
		if strings.TrimSpace(rest) != ">" {
			exprs = append(exprs, rest)
			continue
		}
		var block []string
		for i+1 < len(lines) && len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > len(key) {
			i++
			block = append(block, strings.TrimSpace(lines[i]))
		}
		exprs = append(exprs, strings.Join(block, " "))
	}
	return exprs
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRulesNameServedMetrics: every pginbox_* series a rule selects is
// served by a running runner's /metrics from the start, before anything
// happened: a rule on a series that is never served never fires and cannot
// be told from a rule over a misspelt name, and a counter that first
// appears at 1 is missed by increase() (pitfall of *Vec metrics). Two
// installs:
//
//   - a default one: two providers with their secrets and nothing else (no
//     status API or event log, nothing ordered, no check run yet). Every
//     name a rule selects is served, and every series of it labelled
//     provider is 0 and there for each configured provider. Before, the
//     backfill, ordering and check series were missing there.
//   - one with every feature: backfill providers (a status API and an event
//     log), the checks run once, stripe ordered per key. Every selector is
//     served with its fixed label values (reason="database unavailable",
//     job="backfill").
func TestRulesNameServedMetrics(t *testing.T) {
	t.Parallel()
	rules := readFile(t, filepath.Join(rulesDir, "pginbox-rules.yml"))
	exprs := ruleExprs(rules)
	if len(exprs) < 8 {
		t.Fatalf("found %d exprs in pginbox-rules.yml", len(exprs))
	}
	providers := map[string][2]string{"sume": {"sume", sumeSecret}, "stripe": {"stripe", "whsec_rules_test_secret"}}
	for _, tc := range []struct {
		name     string
		features bool
	}{
		{"default install", false},
		{"backfill, checks and ordering", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conf := NewConfig(t)
			var cfg runner.Config
			if tc.features {
				pool := PoolFor(t, conf.URL(), 2)
				refreshViews(t, pool)
				runChecks(t, pool)
				execSQL(t, pool, `SELECT webhooks.set_ordering('stripe', '$.data.object.customer')`)
				cfg.ProviderAPIs = map[string]runner.ProviderAPI{
					"sume":   {URL: "http://127.0.0.1:9"},
					"stripe": {URL: "http://127.0.0.1:9", Key: "sk_test_rules"},
				}
			}
			srv := startServer(t, conf.URL(), cfg, providers)
			resp, err := http.Get(srv.Admin + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			checkRuleSelectors(t, exprs, string(body), tc.features, slices.Sorted(maps.Keys(providers)))
		})
	}
}

// checkRuleSelectors checks the /metrics text served against the selectors
// of exprs: every name is served; with labels, each selector's equality
// matchers match a served series; without, every series of a selected name
// that carries a provider label is 0, and each of providers has one.
func checkRuleSelectors(t *testing.T, exprs []string, served string, labels bool, providers []string) {
	t.Helper()
	selector := regexp.MustCompile(`(pginbox_[a-z_]+)(\{[^}]*\})?`)
	matcher := regexp.MustCompile(`(\w+)\s*(=~|!=|!~|=)\s*"([^"]*)"`)
	checked := 0
	for _, expr := range exprs {
		for _, sel := range selector.FindAllStringSubmatch(expr, -1) {
			name := sel[1]
			checked++
			series := regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`(\{[^}]*\})? (\S+)$`).FindAllStringSubmatch(served, -1)
			if len(series) == 0 {
				if why, ok := pendingMetrics[name]; ok {
					t.Logf("%s is not served yet (%s)", sel[0], why)
					continue
				}
				t.Errorf("a rule selects %s, which /metrics does not serve", sel[0])
				continue
			}
			if labels {
				// Equality matchers must match a served series; the others
				// only need the name.
				var want []string
				for _, m := range matcher.FindAllStringSubmatch(sel[2], -1) {
					if m[2] == "=" {
						want = append(want, regexp.QuoteMeta(m[1]+`="`+m[3]+`"`))
					}
				}
				if len(want) > 0 && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`\{[^}]*`+strings.Join(want, `[^}]*`)+`[^}]*\} `).MatchString(served) {
					t.Errorf("a rule selects %s, which /metrics does not serve with those labels", sel[0])
				}
				continue
			}
			seen := map[string]bool{}
			for _, s := range series {
				p := regexp.MustCompile(`provider="([^"]*)"`).FindStringSubmatch(s[1])
				if p == nil {
					continue
				}
				seen[p[1]] = true
				if s[2] != "0" {
					t.Errorf("%s%s = %s in an install where nothing happened, want 0", name, s[1], s[2])
				}
			}
			if len(seen) == 0 {
				continue // not labelled by provider
			}
			for _, p := range providers {
				if !seen[p] {
					t.Errorf("a rule selects %s by provider; /metrics serves no %s{provider=%q}", sel[0], name, p)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d selectors", checked)
	}
}
