// Command genvectors writes the signature test vectors that
// tests/verify_vectors_test.go runs through both the Go verifier (package
// runner) and the SQL one (webhooks.ingest_signed):
//
//	go run ./tests/cmd/genvectors -dir tests/testdata/vectors
//
// writes one file per kind, tests/testdata/vectors/<kind>.json.
//
// Every signature is computed here with crypto/hmac from each provider's
// published recipe, independently of the code under test, at fixed times and
// with fixed secrets, so the output is byte-for-byte the same on every run.
// The published vectors (Standard Webhooks specification, GitHub
// documentation) are copied verbatim. Each kind's cases are one file named
// for the kind (sume.go, stripe.go, ...), listed in main; bounds.go holds the
// header bounds every kind shares.
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// vector is one case of tests/testdata/vectors/<kind>.json; tests/verify_vectors_test.go
// reads the same fields.
type vector struct {
	Name    string         `json:"name"`
	Kind    string         `json:"kind"`
	Secrets []string       `json:"secrets"`
	Headers map[string]any `json:"headers"` // name -> string, or []string for a repeated header
	Body    string         `json:"body"`
	// BodyBase64, when set, is the body instead of Body: for bodies that are
	// not valid UTF-8 and so cannot be a JSON string.
	BodyBase64 string `json:"body_base64,omitempty"`
	At         int64  `json:"at"` // unix seconds: the verifier's clock
	Want       want   `json:"want"`
	// GoDiffers, when set, explains why the Go verifier is known to give
	// another answer than Want (the documented one); the test reports it
	// instead of failing.
	GoDiffers string `json:"go_differs,omitempty"`
	// URL is the URL the provider was given, for the kinds that sign it
	// (square): set_provider's url and the Go verifier's.
	URL string `json:"url,omitempty"`
}

// want is the expected verdict: a rejection (Status, Reason) or an accepted
// delivery (ExternalID, EventType).
type want struct {
	Status     int    `json:"status,omitempty"`
	Reason     string `json:"reason,omitempty"`
	ExternalID string `json:"external_id,omitempty"`
	EventType  string `json:"event_type,omitempty"`
}

func ok(id, typ string) want          { return want{ExternalID: id, EventType: typ} }
func unauthorized(reason string) want { return want{Status: 401, Reason: reason} }
func badRequest(reason string) want   { return want{Status: 400, Reason: reason} }

// t0 is the clock of every vector that does not say otherwise.
const t0 int64 = 1_700_000_000

func macHex(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func macBase64(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func ts(n int64) string { return strconv.FormatInt(n, 10) }

// hdr builds a header map from name/value pairs; a value may be a string or a []string.
func hdr(kv ...any) map[string]any {
	h := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i].(string)] = kv[i+1]
	}
	return h
}

// with returns a copy of h with name set to value, or removed when value is nil.
func with(h map[string]any, name string, value any) map[string]any {
	out := map[string]any{}
	for k, v := range h {
		out[k] = v
	}
	if value == nil {
		delete(out, name)
	} else {
		out[name] = value
	}
	return out
}

func main() {
	dir := flag.String("dir", "", "write <kind>.json for each kind into this folder instead of all vectors to standard output")
	flag.Parse()
	var vs []vector
	vs = append(vs, sumeVectors()...)
	vs = append(vs, stripeVectors()...)
	vs = append(vs, githubVectors()...)
	vs = append(vs, standardWebhooksVectors()...)
	vs = append(vs, shopifyVectors()...)
	vs = append(vs, paddleVectors()...)
	vs = append(vs, standardWebhooksV1aVectors()...)
	vs = append(vs, slackVectors()...)
	vs = append(vs, linearVectors()...)
	vs = append(vs, squareVectors()...)
	vs = append(vs, boundsVectors()...)

	seen := map[string]bool{}
	for _, v := range vs {
		if seen[v.Name] {
			fmt.Fprintf(os.Stderr, "genvectors: duplicate vector name %q\n", v.Name)
			os.Exit(1)
		}
		seen[v.Name] = true
	}
	if *dir == "" {
		os.Stdout.Write(encode(vs))
		return
	}
	perKind := map[string][]vector{}
	var kinds []string
	for _, v := range vs {
		if perKind[v.Kind] == nil {
			kinds = append(kinds, v.Kind)
		}
		perKind[v.Kind] = append(perKind[v.Kind], v)
	}
	for _, kind := range kinds {
		path := filepath.Join(*dir, kind+".json")
		if err := os.WriteFile(path, encode(perKind[kind]), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genvectors:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "genvectors: wrote %d vectors to %s\n", len(perKind[kind]), path)
	}
}

// encode returns vs as indented JSON, HTML characters unescaped.
func encode(vs []vector) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(vs); err != nil {
		fmt.Fprintln(os.Stderr, "genvectors:", err)
		os.Exit(1)
	}
	return buf.Bytes()
}
