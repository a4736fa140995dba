package console

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pginbox/pginbox/internal/console/format"
)

// chartPair is one window's two charts (throughput, latency) and its sums.
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

// bar is one rectangle of a throughput chart.
type bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

// label is an axis label (or a p99 dot) at X.
type label struct {
	X    float64
	Text string
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
	tp.Max = format.Num(float64(maxN))
	lat.Points = strings.Join(pts, " ")
	lat.P50 = strings.Join(p50, " ")
	lat.Max = format.Duration(time.Duration(maxL * float64(time.Second)))
	lat.Empty = len(pts) == 0
	return tp, lat
}
