package runner_test

import (
	"context"
	"log"
	"os"
	"testing"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// databaseURL is an empty database on the test server, for the runnable
// examples (they have no testing.T to ask the harness for one).
var databaseURL string

// TestMain creates the examples' database, runs the tests, drops it, and
// stops the throwaway Postgres cluster the harness may have started.
func TestMain(m *testing.M) {
	url, drop, err := pgtest.EmptyDatabase(context.Background(), "runner_example")
	if err != nil {
		log.Printf("no database for the examples: %v", err)
		os.Exit(1)
	}
	databaseURL = url
	pgtest.Main(m, drop)
}
