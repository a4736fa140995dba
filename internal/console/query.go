package console

import (
	"net/url"
	"time"

	"github.com/pginbox/pginbox/internal/console/filter"
)

// Query is one statement the console runs, with its arguments.
type Query struct {
	// Name says which statement it is: "page" or "counts".
	Name string
	// SQL is the statement, with $n placeholders.
	SQL string
	// Args are its arguments, in order.
	Args []any
}

// ListSQL returns the statements GET /api/events runs for query (the page
// and the capped counts per status), for the bench and the plan tests to
// EXPLAIN. A bad query returns the error the API answers 400 with.
func ListSQL(query url.Values) ([]Query, error) {
	lr, err := filter.ParseList(query)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var args []any
	page := lr.Filter.ListSQL(eventCols, lr.After, lr.Limit+1, now, &args)
	var cargs []any
	counts := lr.Filter.CountSQL(now, &cargs)
	return []Query{{Name: "page", SQL: page, Args: args}, {Name: "counts", SQL: counts, Args: cargs}}, nil
}
