package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// pauseProvider runs webhooks.pause (or resume when reason is nil),
// recording the operator (see operator) in the audit.
func (c *Console) pauseProvider(ctx context.Context, provider string, reason *string, r *http.Request) (bool, error) {
	var changed bool
	var err error
	if reason != nil {
		err = c.pool.QueryRow(ctx, `SELECT webhooks.pause($1, $2, $3)`, provider, strings.TrimSpace(*reason), c.operator(r)).Scan(&changed)
	} else {
		err = c.pool.QueryRow(ctx, `SELECT webhooks.resume($1, $2)`, provider, c.operator(r)).Scan(&changed)
	}
	if err != nil {
		return false, err
	}
	c.cache.invalidate()
	c.log.Info("provider pause changed from the console", "provider", provider, "paused", reason != nil, "remote", r.RemoteAddr)
	if reason == nil {
		c.wake("resume")
	}
	return changed, nil
}

// apiPause is POST /api/providers/{provider}/pause ({"reason": "..."})
// and …/resume.
func (c *Console) apiPause(resume bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		provider := r.PathValue("provider")
		var body struct {
			Reason string `json:"reason"`
		}
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if !resume {
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil || strings.TrimSpace(body.Reason) == "" {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "a non-blank \"reason\" is required"})
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		var reason *string
		if !resume {
			reason = &body.Reason
		}
		changed, err := c.pauseProvider(ctx, provider, reason, r)
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && (pe.Code == "22023" || pe.Code == "22001" || pe.Code == "23502" || pe.Code == "23514") {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad provider name or reason"})
				return
			}
			c.log.Warn("console: pause", "error", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"provider": provider, "paused": !resume, "changed": changed})
	}
}

// formPause is the console's pause/resume buttons.
func (c *Console) formPause(resume bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		var reason *string
		if !resume {
			v := strings.TrimSpace(r.PostForm.Get("reason"))
			if v == "" {
				http.Error(w, "a reason is required", http.StatusBadRequest)
				return
			}
			reason = &v
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		back := localPath(r.PostForm.Get("back"))
		if _, err := c.pauseProvider(ctx, r.PathValue("provider"), reason, r); err != nil {
			c.log.Warn("console: pause", "error", err)
			redirectFlash(w, r, back, "failed", 0)
			return
		}
		code := "paused"
		if resume {
			code = "resumed"
		}
		redirectFlash(w, r, back, code, 0)
	}
}
