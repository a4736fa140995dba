package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/outbound"
	"github.com/pginbox/pginbox/internal/redact"
	"github.com/pginbox/pginbox/pginboxtype"
)

// externalHandler is implemented by handlers whose effects live outside the
// database (an HTTP call): the runner then completes each event in its own
// short transaction right after it succeeded, instead of batching.
type externalHandler interface {
	pginboxtype.Handler
	External() bool
}

// sqlHandler calls a SQL function taking one webhooks.events argument with
// the claimed row, in the transaction that completes the event.
type sqlHandler struct {
	// Function is the schema-qualified function name, e.g. "app.on_webhook".
	Function string
	query    string
	// signature is the quoted regprocedure, e.g. "app"."on_webhook"(webhooks.events).
	signature string
	// perEvent runs the function event by event from Go (four round trips
	// per event) instead of in one webhooks.process_batch() statement per
	// batch; only the bench sets it (see [PerEvent]), to compare the two.
	perEvent bool
}

var _ pginboxtype.Handler = (*sqlHandler)(nil)

var sqlFunctionName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z_][A-Za-z0-9_$]*$`)

// newSQLHandler validates the function name (schema.function).
func newSQLHandler(function string) (*sqlHandler, error) {
	if !sqlFunctionName.MatchString(function) {
		return nil, fmt.Errorf("handler sql:%s: want sql:<schema>.<function>", function)
	}
	schema, name, _ := strings.Cut(function, ".")
	ident := pgx.Identifier{schema, name}.Sanitize()
	return &sqlHandler{
		Function:  function,
		query:     sqlHandlerQuery(ident, false),
		signature: ident + `(webhooks.events)`,
	}, nil
}

// sqlHandlerQuery calls the function ident on a claimed event. The status
// filter leaves out the history branch of the view at plan time: a claimed
// event is in the queue. A function created before storage v2 takes
// webhooks.inbox (the table it was written for was renamed), and gets the
// same row converted.
func sqlHandlerQuery(ident string, inbox bool) string {
	arg := `e`
	if inbox {
		arg = `ROW(e.*)::webhooks.inbox`
	}
	return `SELECT ` + ident + `(` + arg + `) FROM webhooks.events AS e WHERE e.id = $1 AND e.status <> 'processed'`
}

// Check verifies that the function exists with a webhooks.events argument
// (or a webhooks.inbox one, written before storage v2: then the handler
// passes the row as that type).
func (h *sqlHandler) Check(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) error {
	sig := h.signature
	var ok, inbox bool
	ident, _ := strings.CutSuffix(sig, `(webhooks.events)`)
	if err := q.QueryRow(ctx, `SELECT to_regprocedure($1) IS NOT NULL, to_regprocedure($2) IS NOT NULL`,
		sig, ident+`(webhooks.inbox)`).Scan(&ok, &inbox); err != nil {
		return fmt.Errorf("handler sql:%s: %w", h.Function, err)
	}
	if !ok && !inbox {
		return fmt.Errorf("handler sql:%s: no function %s", h.Function, sig)
	}
	if !ok {
		h.query = sqlHandlerQuery(ident, true)
		h.signature = ident + `(webhooks.inbox)`
	}
	return nil
}

// Handle calls the function with the event's row.
func (h *sqlHandler) Handle(ctx context.Context, tx pgx.Tx, ev *pginboxtype.Event) error {
	if _, err := tx.Exec(ctx, h.query, ev.ID); err != nil {
		return fmt.Errorf("sql handler %s: %w", h.Function, err)
	}
	return nil
}

// httpHandler POSTs each event as JSON to URL with an Idempotency-Key header
// (the event id). A 2xx completes the event; anything else fails it with the
// status and the start of the response in last_error. Delivery to the
// endpoint is at-least-once: it must honour the Idempotency-Key. A redirect
// is not followed (the 3xx fails the attempt like any other status), and
// HTTP_PROXY / HTTPS_PROXY are ignored: the event goes to URL and nowhere
// else. An error names URL without its userinfo and query string.
type httpHandler struct {
	// URL receives the POSTs.
	URL string
	// Client sends them; its Timeout bounds each call.
	Client *http.Client
}

var _ externalHandler = (*httpHandler)(nil)

// External reports true: the effects are outside the database.
func (h *httpHandler) External() bool { return true }

// httpStatusError is a non-2xx answer from the handler endpoint.
type httpStatusError struct {
	Status int
	Body   string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("http handler: %d %s: %s", e.Status, http.StatusText(e.Status), e.Body)
}

// Handle POSTs the event.
func (h *httpHandler) Handle(ctx context.Context, _ pgx.Tx, ev *pginboxtype.Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("http handler: encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("http handler: %w", redact.URLError(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", strconv.FormatInt(ev.ID, 10))
	req.Header.Set("User-Agent", "pginbox")
	resp, err := h.Client.Do(req)
	if err != nil {
		return fmt.Errorf("http handler: %w", redact.URLError(err))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &httpStatusError{Status: resp.StatusCode, Body: strings.TrimSpace(string(snippet))}
	}
	return nil
}

// defaultHTTPTimeout bounds one POST of an http: handler built without a
// timeout of its own (the default of PGINBOX_HTTP_TIMEOUT).
const defaultHTTPTimeout = 30 * time.Second

// ParseHandler builds a handler from PGINBOX_HANDLER: "none" (returns nil,
// nil), "sql:<schema.function>" or "http:<url>". httpTimeout bounds each POST
// of an http: handler; zero (or negative) means the default, 30s, never no
// timeout. A sql: handler ignores it.
func ParseHandler(spec string, httpTimeout time.Duration) (pginboxtype.Handler, error) {
	switch {
	case spec == "" || spec == "none":
		return nil, nil
	case strings.HasPrefix(spec, "sql:"):
		return newSQLHandler(strings.TrimPrefix(spec, "sql:"))
	case strings.HasPrefix(spec, "http:"):
		u := strings.TrimPrefix(spec, "http:")
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			// Not repeated: the URL may carry a token.
			return nil, errors.New("handler http:<url>: want http:<http(s)://url> (the value is not repeated: it may hold a token)")
		}
		if httpTimeout <= 0 {
			httpTimeout = defaultHTTPTimeout
		}
		return &httpHandler{URL: u, Client: outbound.Client(httpTimeout)}, nil
	default:
		return nil, errors.New("want none, sql:<schema.function> or http:<url> (the value is not repeated: it may hold a token)")
	}
}

// Check verifies, for a sql: handler, that its function exists with a
// webhooks.events argument; any other handler passes.
func Check(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, h pginboxtype.Handler) error {
	if s, ok := h.(*sqlHandler); ok {
		return s.Check(ctx, q)
	}
	return nil
}

// PerEvent returns a copy of a sql: handler (from [ParseHandler]) that the
// workers run event by event from Go — a savepoint, the function,
// complete() and a release per event, under the two-phase lease — instead of
// one webhooks.process_pending() or webhooks.process_batch() statement per
// batch. Any other handler is returned as it is. The bench uses it to
// compare the two.
func PerEvent(h pginboxtype.Handler) pginboxtype.Handler {
	if s, ok := h.(*sqlHandler); ok {
		perEvent := *s
		perEvent.perEvent = true
		return &perEvent
	}
	return h
}
