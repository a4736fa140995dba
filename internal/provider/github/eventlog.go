package github

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pginbox/pginbox/internal/provider/api"
)

// EventLog reads a GitHub App's webhook delivery log, the event-log API of
// kind github:
//
//	GET <BaseURL>/app/hook/deliveries?per_page=100[&cursor=…]   (pages by the Link header)
//	GET <BaseURL>/app/hook/deliveries/{id}                      (the recorded request)
//	Authorization: Bearer <RS256 JWT of the app>
//
// The log lists every attempt (a failed delivery and its redeliveries share
// one guid): a pass keeps one entry per guid and fetches the detail only for
// guids not stored. A recovered delivery is stored under its guid (the
// X-GitHub-Delivery a webhook carries), with the event type a webhook would
// get (X-GitHub-Event plus the payload's action, as [EventType] derives it)
// and request.payload as the payload. The JWT (iss = the app id, 9 minutes)
// is renewed a minute before it expires. Only BaseURL's origin is contacted:
// a Link to another origin is refused.
type EventLog struct {
	provider string
	base     string
	origin   api.Origin
	appID    string
	key      *rsa.PrivateKey
	client   *http.Client
	now      func() time.Time

	mu     sync.Mutex
	jwt    string
	jwtExp time.Time
}

var (
	_ api.EventLog = (*EventLog)(nil)
	_ api.Prober   = (*EventLog)(nil)
)

// logger is where NewEventLog warns; tests replace it.
var logger = slog.Default

// NewEventLog returns the delivery-log client of a github provider. key is
// the app's private key in PEM (PKCS#1 or PKCS#8), that PEM base64-encoded,
// or the path of a file holding it (a file readable by group or others is
// logged as a warning). Errors never repeat the key.
func NewEventLog(provider, baseURL, appID, key string) (*EventLog, error) {
	baseURL = strings.TrimRight(strings.TrimSpace(baseURL), "/")
	o, err := api.ParseOrigin(baseURL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: API URL: %w", provider, err)
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(appID), 10, 64); err != nil || n <= 0 {
		return nil, fmt.Errorf("provider %s: PGINBOX_GITHUB_APP_ID_%s must be the GitHub App's numeric id", provider, strings.ToUpper(strings.ReplaceAll(provider, "-", "_")))
	}
	keyVar := "PGINBOX_API_KEY_" + strings.ToUpper(strings.ReplaceAll(provider, "-", "_"))
	pk, err := parseRSAKey(key, func(msg string) {
		logger().Warn("backfill: "+keyVar+": "+msg, "provider", provider)
	})
	if err != nil {
		return nil, fmt.Errorf("provider %s: GitHub App private key: %w", provider, err)
	}
	return &EventLog{provider: provider, base: baseURL, origin: o, appID: strings.TrimSpace(appID), key: pk,
		client: api.NewClient(o), now: time.Now}, nil
}

// parseRSAKey reads an RSA private key given as PEM text, base64-encoded
// PEM (as Kubernetes secrets and Helm values hold it), or the path of a PEM
// file. Surrounding quotes left by an env file, a byte-order mark and
// literal "\n" escapes in PEM text are tolerated. Its errors never repeat
// the value nor any part of it: a key given as text, not a path, would be
// printed. warn receives the problems that do not stop it (a key file
// readable by group or others).
func parseRSAKey(v string, warn func(msg string)) (*rsa.PrivateKey, error) {
	v = unwrapValue(v)
	if v == "" {
		return nil, errors.New("none set (the PEM, base64-encoded PEM, or a path to a PEM file)")
	}
	data, err := keyPEM(v, warn)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("not an RSA private key (PKCS#1 or PKCS#8)")
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an RSA key")
	}
	return rk, nil
}

// unwrapValue trims spaces, a leading byte-order mark and one pair of
// matching quotes around the whole value.
func unwrapValue(v string) string {
	v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "\uFEFF"))
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = strings.TrimSpace(v[1 : len(v)-1])
	}
	return v
}

// keyPEM returns the PEM text of the key value v: v itself, v base64-decoded,
// or the file v names.
func keyPEM(v string, warn func(msg string)) ([]byte, error) {
	if strings.HasPrefix(v, "-----BEGIN") {
		if !strings.Contains(v, "\n") && strings.Contains(v, `\n`) {
			v = strings.ReplaceAll(v, `\n`, "\n") // one line from an env file
		}
		return []byte(v), nil
	}
	compact := strings.Join(strings.Fields(v), "")
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
		if b, err := enc.DecodeString(compact); err == nil {
			if b = bytes.TrimSpace(bytes.TrimPrefix(b, []byte("\uFEFF"))); bytes.HasPrefix(b, []byte("-----BEGIN")) {
				return b, nil
			}
		}
	}
	if len(v) > 4096 || strings.ContainsAny(v, "\n\r\x00") {
		return nil, errors.New("not PEM, not base64-encoded PEM, and too long or not one line for a file path")
	}
	f, err := os.Open(v)
	if err != nil {
		return nil, fmt.Errorf("not PEM, not base64-encoded PEM, and not a readable file (%s)", fileProblem(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o077 != 0 {
		warn(fmt.Sprintf("the private key file is readable by group or others (mode %04o): chmod 600 it", st.Mode().Perm()))
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("the file cannot be read (%s)", fileProblem(err))
	}
	return b, nil
}

// fileProblem says why a file could not be opened or read, without its
// name (an *os.PathError's text repeats the path).
func fileProblem(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, syscall.ENAMETOOLONG):
		return "file name too long"
	case errors.Is(err, syscall.EISDIR):
		return "a directory"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return "cannot read it"
}

// Provider returns the provider's name.
func (g *EventLog) Provider() string { return g.provider }

// token returns the app's JWT, signing a new one when the current one has
// less than a minute left.
func (g *EventLog) token() (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if g.jwt != "" && g.jwtExp.Sub(now) > time.Minute {
		return g.jwt, nil
	}
	iat, exp := now.Add(-time.Minute), now.Add(9*time.Minute) // GitHub allows 10 minutes, clocks drift
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`))
	claims, err := json.Marshal(map[string]any{"iat": iat.Unix(), "exp": exp.Unix(), "iss": g.appID})
	if err != nil {
		return "", err
	}
	signing := header + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, g.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("%s API: sign the app JWT: %w", g.provider, err)
	}
	g.jwt, g.jwtExp = signing+"."+enc.EncodeToString(sig), exp
	return g.jwt, nil
}

func (g *EventLog) get(ctx context.Context, what, u string) ([]byte, http.Header, error) {
	tok, err := g.token()
	if err != nil {
		return nil, nil, err
	}
	return api.GetJSON(ctx, g.client, g.provider, what, u, http.Header{
		"Authorization":        {"Bearer " + tok},
		"Accept":               {"application/vnd.github+json"},
		"X-Github-Api-Version": {"2022-11-28"},
	})
}

// ghDelivery is one entry of the delivery log (and the head of its detail).
type ghDelivery struct {
	ID          *int64  `json:"id"`
	GUID        string  `json:"guid"`
	DeliveredAt string  `json:"delivered_at"`
	Event       string  `json:"event"`
	Action      *string `json:"action"`
	Request     *struct {
		Headers map[string]any  `json:"headers"`
		Payload json.RawMessage `json:"payload"`
	} `json:"request"`
}

// Page reads one page of the delivery log. GitHub does not filter by time:
// the pass stops after the page that reaches before since.
func (g *EventLog) Page(ctx context.Context, _ time.Time, cursor string) (api.LogPage, error) {
	return g.page(ctx, 100, cursor)
}

// Probe asks for the newest delivery only (GET /app/hook/deliveries?per_page=1):
// whether the API answers, for a provider being backed off.
func (g *EventLog) Probe(ctx context.Context) error {
	_, err := g.page(ctx, 1, "")
	return err
}

// page reads one page of per deliveries from cursor ("": the newest).
func (g *EventLog) page(ctx context.Context, per int, cursor string) (api.LogPage, error) {
	u := g.base + "/app/hook/deliveries?per_page=" + strconv.Itoa(per)
	if cursor != "" {
		u += "&cursor=" + url.QueryEscape(cursor)
	}
	body, h, err := g.get(ctx, "delivery log", u)
	if err != nil {
		return api.LogPage{}, err
	}
	bad := func(reason string) (api.LogPage, error) {
		return api.LogPage{}, &api.MalformedError{Provider: g.provider, ExternalID: "delivery log", Reason: reason}
	}
	var list []ghDelivery
	// A field of the wrong type in one delivery leaves that field empty (the
	// delivery is then passed over), not the page unread.
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(body, &list); (err != nil && !errors.As(err, &typeErr)) || list == nil {
		return bad("not a JSON array of deliveries")
	}
	page := api.LogPage{Entries: make([]api.LogEntry, 0, len(list)), ServedAt: api.ServedAt(h)}
	for i, d := range list {
		// A delivery that cannot be fetched or stored is passed over by the
		// pass (Skip), never a reason to refuse the deliveries around it.
		e := api.LogEntry{NeedsFetch: true}
		if api.ValidText(d.GUID) {
			e.Key = d.GUID
		}
		at, err := time.Parse(time.RFC3339, d.DeliveredAt)
		if err == nil {
			e.Created = at
		}
		if d.ID == nil || e.Key == "" || err != nil {
			e.Skip = fmt.Sprintf("delivery %d has no id, guid or delivered_at", i)
		} else {
			e.Ref = strconv.FormatInt(*d.ID, 10)
		}
		page.Entries = append(page.Entries, e)
	}
	next, err := g.nextCursor(h.Get("Link"))
	if err != nil {
		return api.LogPage{}, err
	}
	page.Next = next
	return page, nil
}

// nextCursor returns the cursor of the Link header's rel="next", "" when
// there is none. A next link on another origin, or without a cursor, is
// refused.
func (g *EventLog) nextCursor(link string) (string, error) {
	for part := range strings.SplitSeq(link, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		target = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(target), "<"), ">")
		u, err := url.Parse(target)
		if err != nil || !g.origin.Contains(u) {
			return "", &api.RefusedError{Provider: g.provider, ExternalID: "delivery log", Reason: api.RefusedForeignOrigin,
				Detail: "the Link header's next page is not on the API's origin " + g.origin.String()}
		}
		c := u.Query().Get("cursor")
		if c == "" {
			return "", &api.MalformedError{Provider: g.provider, ExternalID: "delivery log", Reason: "next link without a cursor"}
		}
		return c, nil
	}
	return "", nil
}

// Fetch reads a delivery's detail: the request GitHub sent.
func (g *EventLog) Fetch(ctx context.Context, e api.LogEntry) (api.LogEntry, error) {
	body, _, err := g.get(ctx, e.Key, g.base+"/app/hook/deliveries/"+url.PathEscape(e.Ref))
	if err != nil {
		return e, err
	}
	bad := func(reason string) (api.LogEntry, error) {
		return e, &api.MalformedError{Provider: g.provider, ExternalID: e.Key, Reason: reason}
	}
	var d ghDelivery
	if err := json.Unmarshal(body, &d); err != nil {
		return bad("not a delivery object")
	}
	if d.GUID != e.Key {
		return bad("the detail's guid is not the listed one")
	}
	if d.Request == nil || len(d.Request.Payload) == 0 {
		return bad("no request.payload")
	}
	event := d.Event
	for k, v := range d.Request.Headers {
		if s, ok := v.(string); ok && strings.EqualFold(k, "X-GitHub-Event") {
			event = s
		}
	}
	t, err := EventType(event, d.Request.Payload)
	if err != nil {
		return bad("request.payload or its event type is not what a webhook would carry")
	}
	e.EventType, e.Payload, e.NeedsFetch = t, d.Request.Payload, false
	return e, nil
}
