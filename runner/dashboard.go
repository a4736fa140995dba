package runner

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pginbox/pginbox"
)

// remedies is what to do per check, from the reference's checks table.
var remedies = pginbox.CheckRemedies()

// homePage is what the overview renders.
type homePage struct {
	pageData
	*statusPage
	Breached  []checkStatus
	ByFamily  []familyChecks
	Charts    []chartPair
	CanReplay bool
	Remedy    map[string]string
	// ProviderNames are the configured providers and any paused one.
	ProviderNames []string
	PausedBy      map[string]*pausedProvider
}

type familyChecks struct {
	Family string
	Checks []checkStatus
	Bad    int
	OK     int
}

type chartPair struct {
	Title      string
	Throughput chart
	Latency    chart
	Summary    trafficSummary
}

// chart is a small inline SVG: bars or polylines, precomputed here so the
// template stays dumb.
type chart struct {
	W, H   int
	Bars   []bar
	Points string
	P50    string
	Dots   []label // the p99 points (X, and Y in Text), drawn as dots: one point draws no line
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
		unavailable(w)
		return
	}
	d := homePage{pageData: s.page(r, verdictTitle(st), "home"), statusPage: st, CanReplay: s.cfg.AdminToken != "", Remedy: remedies}
	d.pageData.Paused = st.PausedList
	d.PausedBy = map[string]*pausedProvider{}
	d.ProviderNames = s.providerNames()
	for i, p := range st.PausedList {
		d.PausedBy[p.Provider] = &st.PausedList[i]
		if !slices.Contains(d.ProviderNames, p.Provider) {
			d.ProviderNames = append(d.ProviderNames, p.Provider)
		}
	}
	slices.Sort(d.ProviderNames)
	for _, f := range familyOrder {
		fc := familyChecks{Family: f}
		for _, c := range st.Checks {
			if c.Family != f {
				continue
			}
			fc.Checks = append(fc.Checks, c)
			switch {
			case c.Enabled && c.OK != nil && !*c.OK:
				fc.Bad++
				d.Breached = append(d.Breached, c)
			case c.Enabled && c.OK != nil:
				fc.OK++
			}
		}
		d.ByFamily = append(d.ByFamily, fc)
	}
	tp, lat := trafficCharts(st.Traffic, 12, 5*time.Minute, "15:04")
	d.Charts = append(d.Charts, chartPair{Title: "last hour", Throughput: tp, Latency: lat, Summary: st.Window1h})
	tp, lat = trafficCharts(st.Traffic24h, 24, time.Hour, "15h")
	d.Charts = append(d.Charts, chartPair{Title: "last 24 hours", Throughput: tp, Latency: lat, Summary: st.Window24h})
	s.render(w, "home", d)
}

func verdictTitle(st *statusPage) string {
	if st.Breaches > 0 {
		return fmt.Sprintf("✗ %d breached", st.Breaches)
	}
	return "✓ healthy"
}

// trafficCharts draws slots buckets of width step ending at the newest.
func trafficCharts(buckets []trafficBucket, slots int, step time.Duration, labelFmt string) (chart, chart) {
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
	slot := float64(tp.W) / float64(slots)
	start := buckets[len(buckets)-1].Bucket.Add(-time.Duration(slots-1) * step)
	var pts, p50 []string
	every := max(1, slots/8)
	for _, b := range buckets {
		i := math.Round(float64(b.Bucket.Sub(start)) / float64(step))
		if i < 0 || i > float64(slots-1) {
			continue
		}
		x := i * slot
		h := float64(tp.H-20) * float64(b.Received) / float64(maxN)
		tp.Bars = append(tp.Bars, bar{X: x + 2, Y: float64(tp.H-20) - h, W: slot/2 - 2, H: h, Class: "rx",
			Title: fmt.Sprintf("%s: %d received", b.Bucket.Local().Format("15:04"), b.Received)})
		h = float64(tp.H-20) * float64(b.Processed) / float64(maxN)
		tp.Bars = append(tp.Bars, bar{X: x + slot/2, Y: float64(tp.H-20) - h, W: slot/2 - 2, H: h, Class: "ok",
			Title: fmt.Sprintf("%s: %d processed", b.Bucket.Local().Format("15:04"), b.Processed)})
		if int(i)%every == 0 {
			tp.Labels = append(tp.Labels, label{X: x + 2, Text: b.Bucket.Local().Format(labelFmt)})
			lat.Labels = append(lat.Labels, label{X: x + 2, Text: b.Bucket.Local().Format(labelFmt)})
		}
		if b.WaitP99 != nil {
			y := float64(lat.H-20) - float64(lat.H-30)*(*b.WaitP99)/maxL
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x+slot/2, y))
			lat.Dots = append(lat.Dots, label{X: x + slot/2, Text: fmt.Sprintf("%.1f", y)})
		}
		if b.WaitP50 != nil {
			y := float64(lat.H-20) - float64(lat.H-30)*(*b.WaitP50)/maxL
			p50 = append(p50, fmt.Sprintf("%.1f,%.1f", x+slot/2, y))
		}
	}
	tp.Max = fmtNum(float64(maxN))
	lat.Points = strings.Join(pts, " ")
	lat.P50 = strings.Join(p50, " ")
	lat.Max = fmtDuration(time.Duration(maxL * float64(time.Second)))
	lat.Empty = len(pts) == 0
	return tp, lat
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
