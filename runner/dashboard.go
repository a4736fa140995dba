package runner

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

//go:embed dashboard.html
var dashboardHTML string

var dashboardTmpl = template.Must(template.New("dashboard").Funcs(template.FuncMap{
	"num":   fmtNum,
	"since": func(t time.Time) string { return fmtDuration(time.Since(t)) },
	"secs":  func(f float64) string { return fmtDuration(time.Duration(f * float64(time.Second))) },
	"rng":   fmtRange,
	"deref": func(b *bool) bool { return b != nil && *b },
}).Parse(dashboardHTML))

// dashboardData is what the page template renders.
type dashboardData struct {
	*statusPage
	ByFamily   []familyChecks
	Throughput chart
	Latency    chart
	CanReplay  bool
	Flash      string
}

type familyChecks struct {
	Family string
	Checks []checkStatus
	Bad    int
}

// chart is a small inline SVG: bars or a polyline, precomputed here so the
// template stays dumb.
type chart struct {
	W, H   int
	Bars   []bar
	Points string
	Max    string
	Labels []label
	Empty  bool
}

type bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type label struct {
	X    float64
	Text string
}

func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := s.status(ctx)
	if err != nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "<!doctype html><title>pginbox: database unavailable</title><h1>pginbox</h1><p>Database unavailable: %s</p>", template.HTMLEscapeString(err.Error()))
		return
	}
	d := dashboardData{statusPage: st, CanReplay: s.cfg.AdminToken != "", Flash: r.URL.Query().Get("flash")}
	for _, f := range familyOrder {
		fc := familyChecks{Family: f}
		for _, c := range st.Checks {
			if c.Family == f {
				fc.Checks = append(fc.Checks, c)
				if c.Enabled && c.OK != nil && !*c.OK {
					fc.Bad++
				}
			}
		}
		d.ByFamily = append(d.ByFamily, fc)
	}
	d.Throughput, d.Latency = trafficCharts(st.Traffic)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Cache-Control", "no-store")
	if err := dashboardTmpl.Execute(w, d); err != nil {
		s.log.Warn("render status page", "error", err)
	}
}

func trafficCharts(buckets []trafficBucket) (chart, chart) {
	tp := chart{W: 600, H: 140}
	lat := chart{W: 600, H: 140}
	if len(buckets) == 0 {
		tp.Empty, lat.Empty = true, true
		return tp, lat
	}
	var maxN int64 = 1
	maxL := 0.001
	for _, b := range buckets {
		maxN = max(maxN, b.Received, b.Processed)
		if b.WaitP99 != nil {
			maxL = math.Max(maxL, *b.WaitP99)
		}
	}
	slot := float64(tp.W) / 12
	start := buckets[len(buckets)-1].Bucket.Add(-55 * time.Minute)
	var pts []string
	for _, b := range buckets {
		i := math.Round(b.Bucket.Sub(start).Minutes() / 5)
		if i < 0 || i > 11 {
			continue
		}
		x := i * slot
		h := float64(tp.H-20) * float64(b.Received) / float64(maxN)
		tp.Bars = append(tp.Bars, bar{X: x + 4, Y: float64(tp.H-20) - h, W: slot/2 - 4, H: h, Class: "rx",
			Title: fmt.Sprintf("%s: %d received", b.Bucket.Format("15:04"), b.Received)})
		h = float64(tp.H-20) * float64(b.Processed) / float64(maxN)
		tp.Bars = append(tp.Bars, bar{X: x + slot/2, Y: float64(tp.H-20) - h, W: slot/2 - 4, H: h, Class: "ok",
			Title: fmt.Sprintf("%s: %d processed", b.Bucket.Format("15:04"), b.Processed)})
		tp.Labels = append(tp.Labels, label{X: x + 4, Text: b.Bucket.Local().Format("15:04")})
		if b.WaitP99 != nil {
			y := float64(lat.H-20) - float64(lat.H-30)*(*b.WaitP99)/maxL
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x+slot/2, y))
			lat.Labels = append(lat.Labels, label{X: x + 4, Text: b.Bucket.Local().Format("15:04")})
		}
	}
	tp.Max = fmtNum(float64(maxN))
	lat.Points = strings.Join(pts, " ")
	lat.Max = fmtDuration(time.Duration(maxL * float64(time.Second)))
	lat.Empty = len(pts) == 0
	return tp, lat
}

// replayAction replays a dead event from the page. It needs the admin token
// in the form itself (a cross-site page cannot know it, so the form is
// CSRF-safe) and a same-origin POST.
func (s *Server) replayAction(w http.ResponseWriter, r *http.Request) {
	if s.cfg.AdminToken == "" {
		http.Error(w, "replay from the page is disabled: set PGINBOX_ADMIN_TOKEN", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("token")), []byte(s.cfg.AdminToken)) != 1 {
		s.log.Warn("replay refused: wrong admin token", "remote", r.RemoteAddr)
		http.Error(w, "wrong admin token", http.StatusForbidden)
		return
	}
	id, err := strconv.ParseInt(r.PostForm.Get("event_id"), 10, 64)
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if err != nil || reason == "" {
		http.Error(w, "event_id and a reason are required", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	flash := fmt.Sprintf("event %d replayed", id)
	if _, err := s.work.Exec(ctx, `SELECT webhooks.replay($1::bigint, $2)`, id, "status page: "+reason); err != nil {
		flash = fmt.Sprintf("replay of event %d failed: %v", id, err)
	} else {
		s.log.Info("event replayed from the status page", "event", id, "reason", reason, "remote", r.RemoteAddr)
		if s.workers != nil {
			s.workers.Wake("replay")
		}
	}
	http.Redirect(w, r, "/?flash="+url.QueryEscape(flash), http.StatusSeeOther)
}

func fmtNum(f float64) string {
	switch {
	case math.IsNaN(f):
		return "–"
	case math.Abs(f) >= 1e6:
		return strconv.FormatFloat(f/1e6, 'f', 1, 64) + "M"
	case math.Abs(f) >= 1e4:
		return strconv.FormatFloat(f/1e3, 'f', 1, 64) + "k"
	case f == math.Trunc(f):
		return strconv.FormatFloat(f, 'f', 0, 64)
	default:
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
}

func fmtRange(lo, hi *float64) string {
	switch {
	case lo == nil && hi == nil:
		return "any"
	case lo == nil:
		return "≤ " + fmtNum(*hi)
	case hi == nil:
		return "≥ " + fmtNum(*lo)
	default:
		return fmtNum(*lo) + " – " + fmtNum(*hi)
	}
}

func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}
