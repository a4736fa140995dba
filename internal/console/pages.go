package console

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/console/format"
)

//go:embed console.html
var consoleHTML string

//go:embed console.js
var consoleJS string

// consoleFuncs are the formatting functions the pages' template uses.
var consoleFuncs = template.FuncMap{
	"css":  func() template.CSS { return template.CSS(baseCSS + consoleCSS) },
	"ago":  format.Ago,
	"clip": format.Clip,
	"num": func(v any) string {
		f, ok := format.Float(v)
		if !ok {
			return "–"
		}
		return format.Num(f)
	},
	"since": func(t time.Time) string { return format.Duration(time.Since(t)) },
	"secs": func(v any) string {
		f, ok := format.Float(v)
		if !ok {
			return "–"
		}
		return format.Duration(time.Duration(f * float64(time.Second)))
	},
	"rng":   format.Range,
	"deref": func(b *bool) bool { return b != nil && *b },
	"code":  format.Code,
	"add":   func(a, b int) int { return a + b },
	"sub":   func(a, b int) int { return a - b },
}

// consoleTmpl holds the console's pages (console.html).
var consoleTmpl = template.Must(template.New("console").Funcs(consoleFuncs).Parse(consoleHTML))

// pageData is what every console page carries (the layout's part).
type pageData struct {
	Title  string
	Nav    string
	Token  bool
	Flash  string
	Now    time.Time
	Paused []pausedProvider
}

// page returns the layout's data of a page.
func (c *Console) page(r *http.Request, title, nav string) pageData {
	return pageData{Title: title, Nav: nav, Token: c.auth.HasToken(), Flash: flashText(r), Now: c.now()}
}

// render executes page name into a buffer, so a template error answers 500
// instead of half a page.
func (c *Console) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := consoleTmpl.ExecuteTemplate(&buf, name, data); err != nil {
		c.log.Warn("render console page", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = buf.WriteTo(w)
}

// hiddenField is a form field that carries the filter along.
type hiddenField struct{ Name, Value string }

// consoleScript is GET /console.js.
func (c *Console) consoleScript(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	_, _ = w.Write([]byte(consoleJS))
}
