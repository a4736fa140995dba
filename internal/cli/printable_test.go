package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// hostile is an order key, a gap's key, a handler's error and a worker's
// name as anyone who can deliver a webhook (or call the SQL API) can store
// them: ESC ] 0 ; PWNED BEL retitles an xterm, ESC [ 2 J clears it, U+009B
// is the one-character CSI, DEL, a bidirectional override, then letters
// that must stay as they are.
const hostile = "\x1b]0;PWNED\a\x1b[2J\u009b31m\x7f\u202eé✓"

// hostileShown is hostile as the commands print it.
const hostileShown = `\x1b]0;PWNED\x07\x1b[2J\u009b31m\x7f\u202eé✓`

// TestPrintable: control characters, DEL, C1, the bidirectional overrides
// and bytes that are not UTF-8 become Go escapes; every other character is
// kept.
func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"cus_9", "cus_9"},
		{"Zürich — 東京 ✓ 👩‍💻", "Zürich — 東京 ✓ 👩‍💻"}, // the emoji's zero-width joiner stays
		{`C:\path "quoted"`, `C:\path "quoted"`},
		{"a\tb\nc\rd", `a\tb\nc\rd`},
		{"\x00\x07\x1b\x7f", `\x00\x07\x1b\x7f`},
		{"\u0085\u009b\u009f", `\u0085\u009b\u009f`},
		{"\u202ecba\u202c \u2066x\u2069", `\u202ecba\u202c \u2066x\u2069`},
		{"bad \xff\x9b byte", `bad \xff\x9b byte`},
		{"\ufffd spelled out", "\ufffd spelled out"},
		{hostile, hostileShown},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
		assertPrintable(t, "printable("+strconv.Quote(tc.in)+")", printable(tc.in))
	}
}

// TestPrintableJSON: a JSON text keeps its meaning, and carries neither a
// C1 control, DEL nor a bidirectional override raw.
func TestPrintableJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{hostile, "plain", "\u0085 next line", "tab\there"} {
		raw, _ := json.Marshal(map[string]string{"k": in})
		out := printableJSON(raw)
		assertPrintable(t, string(raw), string(out))
		var back map[string]string
		if err := json.Unmarshal(out, &back); err != nil || back["k"] != in {
			t.Errorf("printableJSON(%s) = %s: decodes to %q (%v), want %q", raw, out, back["k"], err, in)
		}
	}
	if got := string(printableJSON([]byte(`{"k": "a` + "\xff" + `"}`))); got != `{"k": "a\ufffd"}` {
		t.Errorf("a byte that is not UTF-8: %s", got)
	}
}

// assertPrintable fails when out holds a character a terminal would act on
// (a newline ends a line, nothing else).
func assertPrintable(t *testing.T, what, out string) {
	t.Helper()
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		i += size
		if r == '\n' {
			continue
		}
		if (r == utf8.RuneError && size == 1) || r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Errorf("%s: output carries %U at byte %d:\n%q", what, r, i-size, out)
			return
		}
	}
}

// TestCommandsEscapeStoredValues: the commands print stored values (an
// order key, a handler's last error, a gap's provider and external id, a
// worker's name inside an error) with their control characters escaped, in
// tables, in error lines and in JSON, which still decodes to the stored
// value. Before, `pginbox ordering` printed the key raw: the terminal was
// retitled "PWNED" and cleared.
func TestCommandsEscapeStoredValues(t *testing.T) {
	t.Parallel()
	env, pool := adminDB(t)
	ctx := context.Background()
	// A worker named hostile holds an event, the first stored.
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('plain', 'p1', 't', '{}')`)
	var busy int64
	if err := pool.QueryRow(ctx, `SELECT c.id FROM webhooks.claim($1, 1) AS c`, "worker"+hostile).Scan(&busy); err != nil {
		t.Fatalf("claim the plain event as the hostile worker: %v", err)
	}
	// A sequence keyed hostile, blocked by its head's hostile error.
	payload, _ := json.Marshal(map[string]string{"k": hostile})
	pgtest.Exec(t, pool, `SELECT webhooks.set_ordering('evil', '$.k')`)
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('evil', 'e1', 'evil.type', $1::jsonb)`, string(payload))
	pgtest.Exec(t, pool, `SELECT webhooks.ingest_webhook('evil', 'e2', 'evil.type', $1::jsonb)`, string(payload))
	pgtest.Exec(t, pool, `SELECT webhooks.fail(c.id, 'w', c.attempts, $1) FROM webhooks.claim('w', 1) AS c`, "handler: "+hostile)
	// A gap whose provider and external id are hostile.
	pgtest.Exec(t, pool, `SELECT webhooks.expect($1, $1, now() - interval '1 minute')`, "gap"+hostile)

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr bool     // the value is in the error line, not on stdout
		want   []string // in the output, escaped
		json   func(out string) []string
	}{
		{name: "ordering table", args: []string{"ordering"}, want: []string{hostileShown[:30], "handler: " + hostileShown[:20]}},
		{name: "ordering json", args: []string{"ordering", "--json"}, json: func(out string) []string {
			var st struct {
				Blocked []struct {
					Key       string `json:"sequence_key"`
					LastError string `json:"last_error"`
				} `json:"blocked"`
			}
			_ = json.Unmarshal([]byte(out), &st)
			var got []string
			for _, b := range st.Blocked {
				got = append(got, b.Key, b.LastError)
			}
			return got
		}, want: []string{hostile, "handler: " + hostile}},
		{name: "gaps table", args: []string{"gaps"}, want: []string{"gap" + hostileShown}},
		{name: "gaps json", args: []string{"gaps", "--json"}, json: func(out string) []string {
			var gaps []struct {
				Provider   string `json:"provider"`
				ExternalID string `json:"external_id"`
			}
			_ = json.Unmarshal([]byte(out), &gaps)
			var got []string
			for _, g := range gaps {
				got = append(got, g.Provider, g.ExternalID)
			}
			return got
		}, want: []string{"gap" + hostile, "gap" + hostile}},
		{name: "error line", args: []string{"replay", strconv.FormatInt(busy, 10), "--reason", "x"}, code: 1, stderr: true,
			want: []string{"is being processed by worker" + hostileShown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, env, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			assertPrintable(t, "stdout", out)
			assertPrintable(t, "stderr", errOut)
			shown := out
			if tc.stderr {
				shown = errOut
			}
			if tc.json != nil {
				got := tc.json(shown)
				if strings.Join(got, "|") != strings.Join(tc.want, "|") {
					t.Fatalf("decoded %q, want %q\n%s", got, tc.want, shown)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(shown, w) {
					t.Errorf("output lacks %q:\n%s", w, shown)
				}
			}
		})
	}
}

// TestJSONLogLinesPrintable: the commands' JSON log on stderr (a backfill
// warning quoting a provider's answer, serve's log) carries no raw DEL, C1
// or bidi control either (slog escapes only C0), and each line still
// decodes to what was logged.
func TestJSONLogLinesPrintable(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	log := slog.New(slog.NewJSONHandler(jsonLogWriter{&buf}, nil))
	log.Warn("backfill: the API answered", "body", hostile)
	assertPrintable(t, "log line", buf.String())
	var rec struct {
		Body string `json:"body"`
	}
	if err := json.Unmarshal([]byte(buf.String()), &rec); err != nil || rec.Body != hostile {
		t.Fatalf("log line %s decodes to %q (%v), want %q", buf.String(), rec.Body, err, hostile)
	}
}
