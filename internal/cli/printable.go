package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// printable returns s fit to print on an operator's terminal. Stored values
// (an order key, an event type, a provider's name, a handler's last error,
// a check's name, an API's answer inside an error) come from outside: a
// key of "\x1b]0;PWNED\a\x1b[2J" printed raw would retitle and clear the
// terminal. Every control character (C0 with tab and newline, DEL, C1),
// every byte that is not UTF-8 and the bidirectional overrides and isolates
// (which reorder what is shown, so one key would read as another) is
// written as a Go escape: \x1b, \t, \n, \x7f, \u009b, \u202e, \xff. Every
// other character, letters of any script, emoji and backslashes included,
// is kept as it is.
func printable(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafeRune(r, size):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports whether r (decoded from size bytes) must not reach a
// terminal as it is: a control character, a byte that is not UTF-8, or a
// bidirectional override or isolate.
func unsafeRune(r rune, size int) bool {
	switch {
	case r == utf8.RuneError:
		return size == 1 // U+FFFD itself, spelled out, is fine
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// printableJSON returns the JSON text js with every DEL, C1 control and
// bidirectional override or isolate written as a \u escape, and every byte
// that is not UTF-8 as \ufffd. encoding/json and PostgreSQL's jsonb already
// escape C0 controls inside strings but leave those raw, and U+009B is a
// terminal's CSI like ESC [. Outside strings JSON has only ASCII, so the
// text stays valid JSON and decodes to the same values.
func printableJSON(js []byte) []byte {
	i := 0
	for i < len(js) {
		r, size := utf8.DecodeRune(js[i:])
		if r != '\n' && r != '\t' && r != '\r' && unsafeRune(r, size) {
			break
		}
		i += size
	}
	if i == len(js) {
		return js
	}
	out := make([]byte, 0, len(js)+16)
	out = append(out, js[:i]...)
	for i < len(js) {
		r, size := utf8.DecodeRune(js[i:])
		switch {
		case r == '\n' || r == '\t' || r == '\r' || !unsafeRune(r, size):
			out = append(out, js[i:i+size]...)
		case r == utf8.RuneError:
			out = append(out, `\ufffd`...)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	return out
}

// writeJSON writes v as one JSON document (indented when indent is set),
// through [printableJSON].
func writeJSON(w io.Writer, v any, indent bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(printableJSON(buf.Bytes()))
	return err
}

// jsonLogWriter passes each JSON log line of a slog.JSONHandler (one Write
// per record) through [printableJSON] to w.
type jsonLogWriter struct{ w io.Writer }

// Write writes the escaped line and reports p as written whole.
func (j jsonLogWriter) Write(p []byte) (int, error) {
	if _, err := j.w.Write(printableJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
