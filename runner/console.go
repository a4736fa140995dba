package runner

import (
	"net/http"
	"net/url"
)

// consoleRoutes registers the console's pages and JSON on the guarded mux.
func (s *Server) consoleRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /console.js", s.consoleScript)
	mux.HandleFunc("GET /events", s.eventsHTML)
	mux.HandleFunc("GET /events/{id}", s.eventHTML)
	mux.HandleFunc("GET /api/events", s.apiEvents)
	mux.HandleFunc("GET /api/events/{id}", s.apiEvent)
	mux.HandleFunc("POST /api/events/replay", s.apiReplay)
	mux.HandleFunc("POST /events/replay", s.bulkReplayForm)
	mux.HandleFunc("POST /events/{id}/replay", s.replayOne)
	mux.HandleFunc("POST /api/providers/{provider}/pause", s.apiPause(false))
	mux.HandleFunc("POST /api/providers/{provider}/resume", s.apiPause(true))
	mux.HandleFunc("POST /providers/{provider}/pause", s.formPause(false))
	mux.HandleFunc("POST /providers/{provider}/resume", s.formPause(true))
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
