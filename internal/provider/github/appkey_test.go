package github

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/provider/github/githubfake"
)

// leak returns the first piece of secret, six bytes or longer, that text
// repeats; "" when none.
func leak(text, secret string) string {
	for i := 0; i+6 <= len(secret); i++ {
		if strings.Contains(text, secret[i:i+6]) {
			return secret[i : i+6]
		}
	}
	return ""
}

// TestAppKeyForms: the app's private key is accepted as PEM, as
// base64-encoded PEM (how Kubernetes secrets and Helm values hold it), still
// in quotes from an env file, after a byte-order mark, as one line with \n
// escapes, as PKCS#8, and as the path of a file.
func TestAppKeyForms(t *testing.T) {
	t.Parallel()
	key, pemText := githubfake.AppKey(t)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	b64 := base64.StdEncoding.EncodeToString([]byte(pemText))
	var wrapped strings.Builder // base64 -w 76
	for i := 0; i < len(b64); i += 76 {
		wrapped.WriteString(b64[i:min(i+76, len(b64))] + "\n")
	}
	file := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(file, []byte(pemText), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{
		"PEM":                   pemText,
		"PKCS#8":                pkcs8,
		"base64 PEM":            b64,
		"base64 PEM, unpadded":  strings.TrimRight(b64, "="),
		"base64 PEM, wrapped":   wrapped.String(),
		"double-quoted PEM":     `"` + pemText + `"`,
		"single-quoted base64":  "'" + b64 + "'",
		"BOM then PEM":          "\uFEFF" + pemText,
		"BOM then base64":       "\uFEFF" + b64,
		"one line, \\n escaped": `"` + strings.ReplaceAll(strings.TrimSpace(pemText), "\n", `\n`) + `"`,
		"file":                  file,
		"quoted file":           `"` + file + `"`,
	} {
		got, err := parseRSAKey(v, func(string) {})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !got.Equal(key) {
			t.Errorf("%s: another key", name)
		}
	}
}

// TestAppKeyErrorsNeverRepeatTheValue: a key that cannot be used (garbage
// in base64, a mangled PEM, a long value taken for a path) is refused with
// an error that names the variable and the reason and repeats no part of
// the value: before, a value that did not start with -----BEGIN was opened
// as a file and the error printed "open <the whole value>: file name too long".
func TestAppKeyErrorsNeverRepeatTheValue(t *testing.T) {
	t.Parallel()
	_, pemText := githubfake.AppKey(t)
	body := strings.Join(strings.Split(pemText, "\n")[1:4], "") // the start of the key material
	notPEM := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("SENTINEL-not-a-pem-", 30)))
	for name, tc := range map[string]struct{ value, secret string }{
		"base64 of something else": {notPEM, notPEM},
		"mangled base64 PEM":       {"x" + base64.StdEncoding.EncodeToString([]byte(pemText))[5:], base64.StdEncoding.EncodeToString([]byte(pemText))[5:]},
		"PEM with its header cut":  {body + "\nSENTINELxyzzy", body},
		"truncated PEM":            {"-----BEGIN RSA PRIVATE KEY-----\n" + body + "\n", body},
		"quoted, BOM, garbage":     {"\uFEFF\"" + strings.Repeat("SeNtInEl", 40) + "\"", strings.Repeat("SeNtInEl", 40)},
		"a path that is not there": {"/nonexistent/SENTINEL-dir/app.pem", "/nonexistent/SENTINEL-dir/app.pem"},
	} {
		_, err := NewEventLog("gh", "https://api.github.test", "42", tc.value)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), "GitHub App private key") {
			t.Errorf("%s: %q does not say what is wrong", name, err)
		}
		if l := leak(err.Error(), tc.secret); l != "" {
			t.Errorf("%s: the error repeats %q of the value: %s", name, l, err)
		}
	}
}

// TestAppKeyFileReadableByOthersWarns: a key file that group or others can
// read is used, with a warning naming the variable; a 0600 file is not
// warned about.
func TestAppKeyFileReadableByOthersWarns(t *testing.T) { // not parallel: replaces logger
	_, pemText := githubfake.AppKey(t)
	var logs strings.Builder
	logger = func() *slog.Logger { return slog.New(slog.NewTextHandler(&logs, nil)) }
	t.Cleanup(func() { logger = slog.Default })
	for _, mode := range []os.FileMode{0o644, 0o640, 0o600} {
		logs.Reset()
		file := filepath.Join(t.TempDir(), "app.pem")
		if err := os.WriteFile(file, []byte(pemText), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(file, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		if _, err := NewEventLog("gh", "https://api.github.test", "42", file); err != nil {
			t.Fatalf("mode %04o: %v", mode, err)
		}
		warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "PGINBOX_API_KEY_GH") &&
			strings.Contains(logs.String(), "chmod 600")
		if want := mode&0o077 != 0; warned != want {
			t.Errorf("mode %04o: warned %v, want %v: %s", mode, warned, want, logs.String())
		}
	}
}
