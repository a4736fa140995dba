package runner

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pginbox/pginbox/internal/console"
)

// adminHandler builds the operators' listener (package console) from the
// server's parts: its pool, the token and Host rules, the providers, the
// probes and /metrics, and the workers to wake after a replay or a resume.
func (s *Server) adminHandler() (http.Handler, error) {
	names := make([]string, 0, len(s.cfg.Providers))
	for n := range s.cfg.Providers {
		names = append(names, n)
	}
	slices.Sort(names)
	c, err := console.New(console.Config{
		Pool: s.console, Token: s.cfg.AdminToken, Addr: s.cfg.AdminAddr, Hosts: s.cfg.AdminHosts, Providers: names,
		TrustedProxies: s.cfg.AdminTrustedProxies, NoHandler: s.cfg.Handler == nil,
		// A gauge read from the database fails while the database is down;
		// the scrape still answers 200 with every other metric (the moment
		// an on-call engineer needs them most) and logs what it left out.
		Metrics: promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{
			ErrorHandling: promhttp.ContinueOnError,
			ErrorLog:      scrapeLog{s.log},
		}),
		Healthz: http.HandlerFunc(healthz),
		Readyz:  http.HandlerFunc(s.readyz),
		Wake: func(reason string) {
			if s.workers != nil {
				s.workers.Wake(reason)
			}
		},
		Log: s.log,
	})
	if err != nil {
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	return c.Handler(), nil
}

// scrapeLog passes promhttp's scrape errors to the server's logger.
type scrapeLog struct{ log *slog.Logger }

// Println logs one scrape error.
func (l scrapeLog) Println(v ...any) {
	l.log.Warn("metrics scrape: a collector failed; serving the others", "error", fmt.Sprint(v...))
}
