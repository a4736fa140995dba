package runner

import (
	"testing"

	"github.com/pginbox/pginbox/tests"
)

// TestMain stops the throwaway Postgres cluster the tests harness may have
// started for this package's database tests.
func TestMain(m *testing.M) { tests.Main(m) }
