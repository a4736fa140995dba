package console

import (
	"strings"
	"testing"
)

// TestLocalPath: a redirect target is a path on this console, whatever
// next holds: browsers drop tabs and newlines and read a backslash as a
// slash, so each variant below would otherwise reach another host.
func TestLocalPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/events?status=dead": "/events?status=dead", "": "/", "//evil.example/": "/",
		"/\\evil.example": "/", "https://evil.example/": "/", "events": "/",
		"/events/42":                        "/events/42",
		"/events?payload=%7B%22a%22%3A1%7D": "/events?payload=%7B%22a%22%3A1%7D",
		"/\t/evil.example":                  "/", // what next=/%09/evil.example decodes to
		"/\t\t/evil.example":                "/",
		"\t//evil.example":                  "/",
		"/\r\n/evil.example":                "/",
		"/\n/evil.example":                  "/",
		"/\r/evil.example":                  "/",
		" //evil.example":                   "/",
		"/ /evil.example":                   "/",
		"/\x00/evil.example":                "/",
		"/\x7f/evil.example":                "/",
		"\\\\evil.example":                  "/",
		"\\/evil.example":                   "/",
		"/\\/evil.example":                  "/",
		"/%2F/evil.example":                 "/", // encoded slash
		"/%2f%2fevil.example":               "/",
		"%2F%2Fevil.example":                "/",
		"/%5C/evil.example":                 "/", // encoded backslash
		"/%5Cevil.example":                  "/",
		"/%09/evil.example":                 "/", // an encoded tab, kept encoded
		"http://evil.example":               "/",
		"https:evil.example":                "/",
		"javascript:alert(1)":               "/",
		"//user@evil.example":               "/",
		"///evil.example":                   "/",
		"/\u3000/evil.example":              "/",
		"/events/%2e%2e":                    "/events/%2e%2e",
		"/events#frag":                      "/events",
	} {
		got := localPath(in)
		if got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
		// Whatever it answers, a browser reads a path on this host.
		if b := strings.NewReplacer("\t", "", "\r", "", "\n", "", "\\", "/").Replace(got); !strings.HasPrefix(b, "/") || strings.HasPrefix(b, "//") {
			t.Errorf("localPath(%q) = %q: a browser reads it as %q", in, got, b)
		}
	}
}
