package console

import (
	"fmt"
	"net/http"
	"strconv"
)

// flashes are the only messages a page shows from its URL (?flash=code):
// fixed sentences, so a crafted link cannot put words on the console.
// Unknown codes show nothing. A count, where one applies, comes from ?n=
// and must be a number.
var flashes = map[string]string{
	"replayed":       "Replayed: the event is pending again and a worker picks it up shortly.",
	"replay-skipped": "Nothing was replayed: the event is being processed right now, or its payload was pruned.",
	"bulk-replayed":  "Replayed %d events: they are pending again.",
	"paused":         "Paused: workers leave this provider's events pending until it is resumed.",
	"resumed":        "Resumed: workers claim this provider's events again.",
	"failed":         "The action failed: database unavailable. The runner's log has the details.",
}

// flashText returns the fixed message of the request's ?flash= code.
func flashText(r *http.Request) string {
	msg, ok := flashes[r.URL.Query().Get("flash")]
	if !ok {
		return ""
	}
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 0 {
		n = 0
	}
	if r.URL.Query().Get("flash") == "bulk-replayed" {
		return fmt.Sprintf(msg, n)
	}
	return msg
}

// unavailable answers a page whose data could not be read: a fixed text,
// the cause is in the log.
func unavailable(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, `<!doctype html><meta charset="utf-8"><title>pginbox: database unavailable</title><h1>pginbox</h1><p>Database unavailable. The runner's log has the details; this page retries when reloaded.</p>`)
}
