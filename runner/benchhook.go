package runner

import (
	"net/http"
	"net/url"
	"time"

	"github.com/pginbox/pginbox/internal/benchhook"
)

// The console's list statements, for the bench and the plan tests to
// EXPLAIN (see internal/benchhook).
func init() {
	benchhook.RegisterConsole(func(q url.Values) ([]benchhook.Query, error) {
		r := &http.Request{URL: &url.URL{RawQuery: q.Encode()}}
		lr, err := parseList(r)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		var args []any
		page := lr.Filter.listSQL(eventCols, lr.After, lr.Limit+1, now, &args)
		var cargs []any
		counts := lr.Filter.countSQL(now, &cargs)
		return []benchhook.Query{{Name: "page", SQL: page, Args: args}, {Name: "counts", SQL: counts, Args: cargs}}, nil
	})
}
