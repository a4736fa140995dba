// Package benchhook is what is left of the bench's door into the runner:
// the console's list statements, which package runner does not export.
// Package runner fills it in at init, so a program that imports runner can
// use it; nothing outside this module can import it. The workers and the
// notifier the bench measures are in internal/process and internal/notify.
package benchhook

import "net/url"

var consoleSQL func(query url.Values) ([]Query, error)

// Query is one statement the console runs, with its arguments.
type Query struct {
	Name string
	SQL  string
	Args []any
}

// RegisterConsole is called by package runner's init with the function
// that turns a GET /api/events query string into the statements it runs.
func RegisterConsole(f func(query url.Values) ([]Query, error)) { consoleSQL = f }

// ConsoleSQL returns the statements GET /api/events runs for query (the
// page and the capped counts per status), for the bench to EXPLAIN.
func ConsoleSQL(query url.Values) ([]Query, error) { return consoleSQL(query) }
