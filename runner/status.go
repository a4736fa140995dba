package runner

import (
	"context"
	"net/http"
	"time"
)

// Status is the JSON of GET /api/status.
type Status struct {
	Time          time.Time        `json:"time"`
	Queue         map[string]int64 `json:"queue"`
	OldestPending float64          `json:"oldest_pending_seconds"`
}

func (s *Server) statusRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/status", s.apiStatus)
}

func (s *Server) status(ctx context.Context) (*Status, error) {
	st := &Status{Time: time.Now().UTC(), Queue: map[string]int64{}}
	var pending, processing int64
	err := s.work.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM webhooks.events WHERE status = 'pending'),
		       (SELECT count(*) FROM webhooks.events WHERE status = 'processing'),
		       coalesce((SELECT extract(epoch FROM now() - min(run_after)) FROM webhooks.events
		                 WHERE status = 'pending' AND run_after <= now()), 0)::float8`).Scan(&pending, &processing, &st.OldestPending)
	if err != nil {
		return nil, err
	}
	st.Queue["pending"], st.Queue["processing"] = pending, processing
	return st, nil
}

func (s *Server) apiStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := s.status(ctx)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, st)
}
