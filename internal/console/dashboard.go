package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// homePage is what the overview renders.
type homePage struct {
	pageData
	*statusPage
	Breached []checkStatus
	// RetryLine says how many events are failing and when the next retry
	// is; empty when none is.
	RetryLine string
	ByFamily  []familyChecks
	Charts    []chartPair
	CanReplay bool
	// ProviderNames are the configured providers and any paused one.
	ProviderNames []string
	PausedBy      map[string]*pausedProvider
}

// familyChecks is one family of anomaly checks on the overview.
type familyChecks struct {
	Family string
	Checks []checkStatus
	Bad    int
	OK     int
}

// dashboard is GET /: the overview page.
func (c *Console) dashboard(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := c.status(ctx)
	if err != nil {
		unavailable(w)
		return
	}
	d := homePage{pageData: c.page(r, verdictTitle(st), "home"), statusPage: st, CanReplay: c.auth.HasToken()}
	d.pageData.Paused = st.PausedList
	if st.Retrying > 0 {
		d.RetryLine = retryText(st.Retrying, st.NextRetryAt, c.now())
	}
	d.PausedBy = map[string]*pausedProvider{}
	d.ProviderNames = c.providerNames()
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
	c.render(w, "home", d)
}

// verdictTitle is the overview's title: what the verdict says.
func verdictTitle(st *statusPage) string {
	switch st.Verdict {
	case verdictBreach:
		return fmt.Sprintf("✗ %d breached", st.Breaches)
	case verdictNoData:
		return "… no data yet"
	case verdictAttention:
		return fmt.Sprintf("! %d failing", st.Retrying)
	}
	return "✓ healthy"
}
