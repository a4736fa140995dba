package runner

import (
	"testing"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestMain stops the throwaway Postgres cluster the tests harness may have
// started for this package's database tests.
func TestMain(m *testing.M) { pgtest.Main(m) }
