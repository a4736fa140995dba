// Package githubfake is a strict fake of a GitHub App's webhook delivery
// log, the API backfill reads for kind github, for the tests: it answers as
// the real API documents, refuses query parameters the real API would not
// accept, checks the app's JWT, and can be scripted to fail.
package githubfake

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Delivery is one attempt in the fake app's delivery log; attempts of
// one event share a GUID.
type Delivery struct {
	ID          int64
	GUID        string
	DeliveredAt time.Time
	Event       string
	Action      string // "" for none
	StatusCode  int
	Redelivery  bool
	Payload     json.RawMessage
}

// Server is a fake of a GitHub App's GET /app/hook/deliveries (newest
// first, per_page 1..100, default 30, paged by a cursor in the Link header)
// and GET /app/hook/deliveries/{id}. Every request must carry an RS256 JWT
// that verifies with Public, issued for AppID, not expired; any other query
// parameter answers 422.
type Server struct {
	*httptest.Server
	AppID  string
	Public *rsa.PublicKey
	// Fail, when set, is asked before each request (n counts from 1).
	Fail func(n int, r *http.Request) (status int, retryAfter string)

	mu         sync.Mutex
	deliveries []Delivery // newest first
	n          int
	details    map[int64]int // detail requests per delivery id
	tokens     map[string]bool
}

// New starts a fake GitHub API for the app appID signing with the
// private key of pub.
func New(appID string, pub *rsa.PublicKey) *Server {
	g := &Server{AppID: appID, Public: pub, details: map[int64]int{}, tokens: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /app/hook/deliveries", g.list)
	mux.HandleFunc("GET /app/hook/deliveries/{id}", g.detail)
	g.Server = httptest.NewServer(mux)
	return g
}

// Add records deliveries.
func (g *Server) Add(ds ...Delivery) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deliveries = append(g.deliveries, ds...)
	slices.SortFunc(g.deliveries, func(a, b Delivery) int {
		if c := b.DeliveredAt.Compare(a.DeliveredAt); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
}

// Details returns how many times the detail of delivery id was requested.
func (g *Server) Details(id int64) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.details[id]
}

// Tokens returns how many distinct JWTs it accepted.
func (g *Server) Tokens() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.tokens)
}

func ghError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"message": %q, "documentation_url": "https://docs.github.com/rest"}`, msg)
}

// admit counts the request, runs Fail and checks the JWT.
func (g *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	g.mu.Lock()
	g.n++
	n := g.n
	g.mu.Unlock()
	if g.Fail != nil {
		if status, ra := g.Fail(n, r); status != 0 {
			if ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			ghError(w, status, "scripted failure")
			return false
		}
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || g.verifyJWT(tok) != nil {
		ghError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return false
	}
	g.mu.Lock()
	g.tokens[tok] = true
	g.mu.Unlock()
	return true
}

// verifyJWT checks an app JWT as GitHub does: RS256 over header.claims with
// the app's key, iss = the app id, iat not in the future, exp in the future
// and at most 10 minutes after iat.
func (g *Server) verifyJWT(tok string) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return fmt.Errorf("not a JWT")
	}
	enc := base64.RawURLEncoding
	var header struct{ Alg, Typ string }
	hb, err := enc.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &header) != nil || header.Alg != "RS256" {
		return fmt.Errorf("bad header")
	}
	sig, err := enc.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(g.Public, crypto.SHA256, sum[:], sig); err != nil {
		return err
	}
	var claims struct {
		Iss any   `json:"iss"` // GitHub takes the app id as a string or a number
		Iat int64 `json:"iat"`
		Exp int64 `json:"exp"`
	}
	cb, err := enc.DecodeString(parts[1])
	if err != nil || json.Unmarshal(cb, &claims) != nil {
		return fmt.Errorf("bad claims")
	}
	now := time.Now().Unix()
	if fmt.Sprint(claims.Iss) != g.AppID || claims.Iat > now+60 || claims.Exp <= now || claims.Exp-claims.Iat > 600 {
		return fmt.Errorf("bad iss, iat or exp")
	}
	return nil
}

func (g *Server) list(w http.ResponseWriter, r *http.Request) {
	if !g.admit(w, r) {
		return
	}
	q := r.URL.Query()
	for k, v := range q {
		if k != "per_page" && k != "cursor" || len(v) != 1 {
			ghError(w, http.StatusUnprocessableEntity, "unknown parameter "+k)
			return
		}
	}
	per := 30
	if v := q.Get("per_page"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 100 {
			ghError(w, http.StatusUnprocessableEntity, "per_page must be 1..100")
			return
		}
		per = p
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		x, err := strconv.Atoi(strings.TrimPrefix(c, "v1_"))
		if err != nil || x < 0 {
			ghError(w, http.StatusUnprocessableEntity, "bad cursor")
			return
		}
		start = x
	}
	g.mu.Lock()
	all := slices.Clone(g.deliveries)
	g.mu.Unlock()
	start = min(start, len(all))
	end := min(start+per, len(all))
	out := make([]map[string]any, 0, end-start)
	for _, d := range all[start:end] {
		var action any
		if d.Action != "" {
			action = d.Action
		}
		out = append(out, map[string]any{"id": d.ID, "guid": d.GUID, "delivered_at": d.DeliveredAt.UTC().Format(time.RFC3339),
			"redelivery": d.Redelivery, "duration": 0.1, "status": http.StatusText(d.StatusCode), "status_code": d.StatusCode,
			"event": d.Event, "action": action, "installation_id": 1, "repository_id": 2})
	}
	if end < len(all) {
		w.Header().Set("Link", fmt.Sprintf(`<%s/app/hook/deliveries?per_page=%d&cursor=v1_%d>; rel="next"`, "http://"+r.Host, per, end))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

func (g *Server) detail(w http.ResponseWriter, r *http.Request) {
	if !g.admit(w, r) {
		return
	}
	if len(r.URL.Query()) != 0 {
		ghError(w, http.StatusUnprocessableEntity, "no parameters expected")
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	g.mu.Lock()
	g.details[id]++
	i := slices.IndexFunc(g.deliveries, func(d Delivery) bool { return d.ID == id })
	var d Delivery
	if i >= 0 {
		d = g.deliveries[i]
	}
	g.mu.Unlock()
	if i < 0 {
		ghError(w, http.StatusNotFound, "Not Found")
		return
	}
	var action any
	if d.Action != "" {
		action = d.Action
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": d.ID, "guid": d.GUID, "delivered_at": d.DeliveredAt.UTC().Format(time.RFC3339),
		"event": d.Event, "action": action, "status_code": d.StatusCode, "redelivery": d.Redelivery,
		"request": map[string]any{"headers": map[string]any{"X-GitHub-Event": d.Event, "X-GitHub-Delivery": d.GUID,
			"Content-Type": "application/json", "X-Hub-Signature-256": "sha256=…"}, "payload": d.Payload},
		"response": map[string]any{"headers": map[string]any{}, "payload": ""}})
}
