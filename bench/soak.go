package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pginbox/pginbox/internal/localpg"
)

// soakMinute is one minute of the soak.
type soakMinute struct {
	Minute      int     `json:"minute"`
	Sent        int64   `json:"sent"`
	Acked       int64   `json:"acked"`
	Errors      int64   `json:"errors"`
	RSSMiB      float64 `json:"runner_rss_mib"`
	Goroutines  int64   `json:"goroutines"`
	Connections int64   `json:"open_connections"`
	ResponseP99 float64 `json:"response_p99_ms"`
	WakeupP50   float64 `json:"wakeup_p50_ms"`
	WakeupP99   float64 `json:"wakeup_p99_ms"`
}

// soakResult is bench/out/soak.json.
type soakResult struct {
	Seconds float64      `json:"seconds"`
	Rate    int          `json:"rate_per_s"`
	Handler string       `json:"handler"`
	Minutes []soakMinute `json:"minutes"`
	Audit   audit        `json:"audit"`
	Machine machineInfo  `json:"machine"`
}

// runSoak is `make soak`: a steady, open-loop signed load of rate
// deliveries per second for dur into one `pginbox serve` with the sql:
// handler and its schedules on; every minute the runner's RSS, goroutines
// and open database connections, and the minute's p99 response; at the end
// each minute's wake-up latency (handler start minus the 200) and the
// exactly-once audit. Exit 1 when the audit fails.
func runSoak(ctx context.Context, env *pgEnv, cfg config, dur time.Duration, rate int, out string, log *slog.Logger) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "bench: soak:", err); return 1 }
	dbURL, err := env.scratch(ctx, "soak")
	if err != nil {
		return fail(err)
	}
	defer env.dropScratch(context.Background(), "soak")
	probe, err := newPool(ctx, dbURL, 2, "bench-probe")
	if err != nil {
		return fail(err)
	}
	defer probe.Close()
	// The soak reads the runner's /metrics, which the operators' listener
	// serves: it gets one (the other scenarios turn it off).
	adminPort, err := localpg.FreePort()
	if err != nil {
		return fail(err)
	}
	adminAddr := fmt.Sprintf("127.0.0.1:%d", adminPort)
	r, err := startRunner(ctx, cfg.bin, "soak", dbURL, cfg.logDir, map[string]string{
		"PGINBOX_ADMIN_ADDR": adminAddr,
		"PGINBOX_PROVIDERS":  "sume=sume", "PGINBOX_SECRET_SUME": string(benchSecret), "PGINBOX_HANDLER": "sql:bench.on_event",
		"PGINBOX_RECONCILE_EVERY": "1m", "PGINBOX_CHECKS_EVERY": "1m"})
	if err != nil {
		return fail(err)
	}
	defer r.stop()
	metricsURLs := []string{"http://" + adminAddr + "/metrics"}

	type sent struct {
		key    string
		minute int
		respAt time.Time
		ok     bool
	}
	n := int64(dur.Seconds() * float64(rate))
	all := make([]sent, n)
	var mu sync.Mutex
	respMS := map[int][]float64{}
	res := &soakResult{Rate: rate, Handler: "sql:bench.on_event", Machine: machine()}
	client := newClient(64)
	defer client.CloseIdleConnections()
	jobs := make(chan int64, 4096)
	var wg sync.WaitGroup
	var deliveries, errs, created int64
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				d := deliverSume(ctx, client, r.base, all[i].key, false)
				mu.Lock()
				deliveries++
				if d.err != nil {
					errs++
				} else {
					all[i].respAt, all[i].ok = d.end, true
					respMS[all[i].minute] = append(respMS[all[i].minute], float64(d.end.Sub(d.start))/1e6)
					if d.outcome == "created" {
						created++
					}
				}
				mu.Unlock()
			}
		}()
	}
	sample := func(minute int) soakMinute {
		m := soakMinute{Minute: minute}
		if ps, ok := readProc(r.pid()); ok {
			m.RSSMiB = round1(float64(ps.RSSKiB) / 1024)
		}
		for _, u := range metricsURLs {
			if v, ok := scrapeMetric(u, "go_goroutines"); ok {
				m.Goroutines = int64(v)
				break
			}
		}
		_ = probe.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pginbox-%'`).Scan(&m.Connections)
		return m
	}
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	minute := 0
	log.Info("soak started", "duration", dur, "rate", rate)
	for i := int64(0); i < n && ctx.Err() == nil; i++ {
		at := start.Add(time.Duration(i) * interval)
		if cur := int(time.Since(start) / time.Minute); cur > minute {
			s := sample(minute + 1)
			res.Minutes = append(res.Minutes, s)
			log.Info("soak minute", "minute", s.Minute, "rss_mib", s.RSSMiB, "goroutines", s.Goroutines, "connections", s.Connections)
			minute = cur
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		all[i] = sent{key: eventKey("soak", i), minute: int(at.Sub(start) / time.Minute)}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if last := int((dur + time.Minute - 1) / time.Minute); len(res.Minutes) < last {
		res.Minutes = append(res.Minutes, sample(len(res.Minutes)+1))
	}
	res.Seconds = round1(time.Since(start).Seconds())
	waitDrained(ctx, probe, 2*time.Minute, log)

	// Wake-up latency per minute, from the handler's own log.
	rows, err := probe.Query(ctx, `
		SELECT e.external_id, (extract(epoch FROM min(h.at)) * 1e6)::bigint
		FROM bench.handled AS h JOIN webhooks.events AS e ON e.id = h.event_id
		WHERE e.provider = 'sume' GROUP BY e.external_id`)
	if err != nil {
		return fail(err)
	}
	handled := map[string]int64{}
	for rows.Next() {
		var k string
		var at int64
		if err := rows.Scan(&k, &at); err != nil {
			rows.Close()
			return fail(err)
		}
		handled[strings.TrimSpace(k)] = at
	}
	rows.Close()
	wake := map[int][]float64{}
	in := auditInput{scenario: "soak", providers: []string{"sume"}, handler: true}
	for _, s := range all {
		if !s.ok {
			continue
		}
		in.acked = append(in.acked, [2]string{"sume", s.key})
		if at, ok := handled[s.key]; ok {
			wake[s.minute] = append(wake[s.minute], float64(at-s.respAt.UnixMicro())/1000)
		}
	}
	for i := range res.Minutes {
		m := &res.Minutes[i]
		idx := m.Minute - 1
		rd, wd := msDist(respMS[idx]), msDist(wake[idx])
		m.ResponseP99, m.WakeupP50, m.WakeupP99 = rd.P99, wd.P50, wd.P99
		m.Acked = int64(len(respMS[idx]))
		for _, s := range all {
			if s.minute == idx && s.key != "" {
				m.Sent++
			}
		}
		m.Errors = m.Sent - m.Acked
	}
	in.deliveries, in.errors, in.createdAnswers = deliveries, errs, created
	a, err := runAudit(ctx, probe, in)
	if err != nil {
		return fail(err)
	}
	res.Audit = a

	fmt.Printf("soak: %d deliveries/s for %.0fs into one runner (sql: handler, schedules on)\n", rate, res.Seconds)
	fmt.Printf("%6s %8s %8s %7s %9s %11s %6s %14s %14s\n", "minute", "sent", "acked", "errors", "RSS MiB", "goroutines", "conns", "response p99", "wake-up p99")
	for _, m := range res.Minutes {
		fmt.Printf("%6d %8d %8d %7d %9.1f %11d %6d %11.1f ms %11.1f ms\n", m.Minute, m.Sent, m.Acked, m.Errors, m.RSSMiB, m.Goroutines, m.Connections, m.ResponseP99, m.WakeupP99)
	}
	fmt.Printf("audit: %s\n", a)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	_ = enc.Encode(res)
	if err := os.WriteFile(filepath.Join(out, "soak.json"), buf.Bytes(), 0o644); err != nil {
		return fail(err)
	}
	fmt.Printf("wrote %s\n", filepath.Join(out, "soak.json"))
	if !a.OK || a.Lost != 0 || a.ProcessedTwice != 0 {
		fmt.Println("bench: SOAK AUDIT FAILED")
		return 1
	}
	return 0
}

// scrapeMetric reads one unlabelled sample from a Prometheus endpoint.
func scrapeMetric(url, name string) (float64, bool) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return 0, false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, name)), 64)
			return v, err == nil
		}
	}
	return 0, false
}
