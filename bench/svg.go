package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Hand-written SVG charts: a line chart (linear or log x) and grouped bars.

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"}

type series struct {
	Name string
	X, Y []float64
}

const (
	chartW, chartH         = 760, 420
	padL, padR, padT, padB = 70, 20, 40, 60
)

func svgHeader(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", padL, html.EscapeString(title))
}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var t []float64
	for v := math.Floor(lo/step) * step; v <= hi+step/2; v += step {
		t = append(t, v)
	}
	return t
}

func fmtTick(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), ".0") + "M"
	case math.Abs(v) >= 1e3:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e3), ".0") + "k"
	case math.Abs(v) < 1:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
}

// lineChart draws series; logX puts x on a log10 scale; step draws
// histogram-like steps.
func lineChart(title, xLabel, yLabel string, logX bool, ss []series, marks bool) string {
	var b strings.Builder
	svgHeader(&b, title)
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for i := range s.X {
			x := s.X[i]
			if logX {
				if x <= 0 {
					continue
				}
				x = math.Log10(x)
			}
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			ymax = math.Max(ymax, s.Y[i])
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if logX {
		xmin, xmax = math.Floor(xmin), math.Ceil(xmax)
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	yt := niceTicks(0, ymax*1.05, 5)
	ytop := yt[len(yt)-1]
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	px := func(x float64) float64 {
		if logX {
			x = math.Log10(x)
		}
		return float64(padL) + (x-xmin)/(xmax-xmin)*pw
	}
	py := func(y float64) float64 { return float64(padT) + ph - y/ytop*ph }
	// grid and axes
	for _, y := range yt {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", padL, chartW-padR, py(y), py(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, py(y)+4, fmtTick(y))
	}
	var xt []float64
	if logX {
		for e := xmin; e <= xmax; e++ {
			for _, m := range []float64{1, 2, 5} {
				if v := m * math.Pow(10, e); math.Log10(v) <= xmax+1e-9 {
					xt = append(xt, v)
				}
			}
		}
	} else {
		xt = niceTicks(xmin, xmax, 6)
	}
	for _, x := range xt {
		if !logX && (x < xmin || x > xmax) {
			continue
		}
		X := px(x)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/>`+"\n", X, X, padT, chartH-padB)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", X, chartH-padB+16, fmtTick(x))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", padL, chartW-padR, chartH-padB, chartH-padB)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", padL, padL, padT, chartH-padB)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padL+int(pw/2), chartH-padB+38, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(16,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padT+int(ph/2), html.EscapeString(yLabel))
	for i, s := range ss {
		c := palette[i%len(palette)]
		var pts []string
		for j := range s.X {
			if logX && s.X[j] <= 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[j]), py(s.Y[j])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		if marks {
			for _, p := range pts {
				xy := strings.Split(p, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", xy[0], xy[1], c)
			}
		}
		ly := padT + 8 + i*18
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/>`+"\n", chartW-padR-230, ly, c)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", chartW-padR-210, ly+6, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// barChart draws groups of bars (one bar per series in each group).
func barChart(title, yLabel string, groups []string, ss []series) string {
	var b strings.Builder
	svgHeader(&b, title)
	ymax := 0.0
	for _, s := range ss {
		for _, y := range s.Y {
			ymax = math.Max(ymax, y)
		}
	}
	yt := niceTicks(0, ymax*1.05, 5)
	ytop := yt[len(yt)-1]
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	py := func(y float64) float64 { return float64(padT) + ph - y/ytop*ph }
	for _, y := range yt {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", padL, chartW-padR, py(y), py(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, py(y)+4, fmtTick(y))
	}
	gw := pw / float64(max(1, len(groups)))
	bw := gw * 0.8 / float64(max(1, len(ss)))
	for g, name := range groups {
		x0 := float64(padL) + float64(g)*gw + gw*0.1
		for i, s := range ss {
			if g >= len(s.Y) {
				continue
			}
			y := s.Y[g]
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`+"\n",
				x0+float64(i)*bw, py(y), bw-2, float64(padT)+ph-py(y), palette[i%len(palette)], html.EscapeString(s.Name), fmtTick(y))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", x0+float64(i)*bw+bw/2-1, py(y)-3, fmtTick(y))
		}
		if len(groups) > 6 {
			fmt.Fprintf(&b, `<text transform="translate(%.1f,%d) rotate(-25)" text-anchor="end">%s</text>`+"\n", x0+gw*0.5, chartH-padB+14, html.EscapeString(name))
		} else {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x0+gw*0.4, chartH-padB+16, html.EscapeString(name))
		}
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", padL, chartW-padR, chartH-padB, chartH-padB)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", padL, padL, padT, chartH-padB)
	fmt.Fprintf(&b, `<text transform="translate(16,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padT+int(ph/2), html.EscapeString(yLabel))
	for i, s := range ss {
		ly := padT + 8 + i*18
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="%s"/>`+"\n", chartW-padR-200, ly, palette[i%len(palette)])
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", chartW-padR-180, ly+9, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// writeCharts writes the SVGs and returns their file names.
func writeCharts(dir string, r *results) []string {
	var files []string
	write := func(name, svg string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(svg), 0o644); err == nil {
			files = append(files, name)
		}
	}
	if r.Latency != nil && len(r.Latency.Runs) > 0 {
		var ss []series
		hi := 100.0
		for _, run := range r.Latency.Runs {
			for _, v := range run.samples {
				hi = math.Max(hi, v*1.1)
			}
		}
		for _, run := range r.Latency.Runs {
			if len(run.samples) == 0 {
				continue
			}
			bins := logHistogram(run.samples, 0.1, hi, 10)
			s := series{Name: fmt.Sprintf("%s @ %d/s (p99 %.1f ms)", run.Config, run.Rate, run.FromResponse.P99)}
			for _, bn := range bins {
				s.X = append(s.X, math.Sqrt(bn.Lo*bn.Hi))
				s.Y = append(s.Y, 100*float64(bn.N)/float64(len(run.samples)))
			}
			ss = append(ss, s)
		}
		write("latency-histogram.svg", lineChart("Wake-up latency: delivery commit (200 received) → handler start",
			"milliseconds (log scale)", "% of deliveries per bin", true, ss, false))
	}
	if g := r.Growth; g != nil && len(g.Points) > 0 {
		in, pr := series{Name: "ingest_webhook, 16 conns (events/s)"}, series{Name: "processing, sql: handler (events/s)"}
		for _, p := range g.Points {
			in.X, in.Y = append(in.X, float64(p.Rows)/1e6), append(in.Y, p.IngestPerS)
			pr.X, pr.Y = append(pr.X, float64(p.Rows)/1e6), append(pr.Y, p.ProcessPerS)
		}
		write("throughput-vs-rows.svg", lineChart("Throughput: empty install vs processed events kept",
			"processed events kept (millions)", "events per second", false, []series{in, pr}, true))
	}
	if r.SQL != nil && len(r.SQL.Pairs) > 0 {
		var groups []string
		in, raw := series{Name: "ingest_webhook()"}, series{Name: "plain INSERT … DO NOTHING"}
		for _, p := range r.SQL.Pairs {
			groups = append(groups, fmt.Sprintf("%s, %d conns", p.Mode, p.Conns))
			in.Y, raw.Y = append(in.Y, p.Ingest.PerS), append(raw.Y, p.Raw.PerS)
		}
		ss := []series{in, raw}
		write("sql-ingest.svg", barChart("SQL ingest vs the plain-insert ceiling (deliveries/s)", "deliveries per second", groups, ss))
	}
	if p := r.Process; p != nil && len(p.Points) > 0 {
		var groups []string
		s := series{Name: "events/s (sql: handler)"}
		for _, pt := range p.Points {
			groups = append(groups, fmt.Sprintf("%dw×%d", pt.Workers, pt.Batch))
			s.Y = append(s.Y, pt.PerS)
		}
		for _, x := range []struct {
			name string
			pt   processPoint
		}{{"A: stats", p.UsualStats}, {"B: stats*", p.StatsInFlight}, {"per event", p.PerEvent}} {
			if x.pt.Events > 0 {
				groups = append(groups, x.name)
				s.Y = append(s.Y, x.pt.PerS)
			}
		}
		write("processing.svg", barChart("Processing throughput: workers × batch size", "events per second", groups, []series{s}))
	}
	if n := r.Notify; n != nil && len(n.Variants) > 0 {
		var groups []string
		s := series{Name: "deliveries/s, 16 conns"}
		for _, v := range n.Variants {
			groups = append(groups, v.Name)
			s.Y = append(s.Y, v.PerS)
		}
		write("notify-cost.svg", barChart("Ingest with no NOTIFY, coalesced NOTIFY, NOTIFY per row", "deliveries per second", groups, []series{s}))
	}
	return files
}
